"""The bytes of one unary request (request line, fixed and auth headers, body) as the keep-alive pool of
manager/client/http11.py sends them, built once and sent again unchanged on a retry."""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import quote, urlencode

from manager.client.writegate import MUTATING_METHODS, WriteGate

Params = dict[str, str]

_PATH_SAFE = "/:@!$&'()*+,;=~%"
# Paths built by GroupVersionResource.api_path are already quoted: re-quote only what could need it.
_NEEDS_QUOTING = re.compile(r"[^A-Za-z0-9/:@!$&'()*+,;=~%._-]").search


def clean_params(params: Mapping[str, object | None]) -> Params:
    """Query parameters without the unset ones; booleans as "true"/"false"."""
    out: Params = {}
    for key, value in params.items():
        if value is None:
            continue
        out[key] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return out


class Unary:
    """One unary request ready to send (and to send again on a retry) through the keep-alive pool."""

    __slots__ = ("body", "gate", "limit", "start")

    def __init__(self, start: str, body: bytes | None, limit: float, gate: WriteGate | None) -> None:
        self.start = start
        self.body = body
        self.limit = limit
        self.gate = gate

    def data(self, headers: dict[str, str]) -> bytes:
        """The request's bytes with these auth headers."""
        if headers:
            lines = "".join(f"{name}: {_header_value(value)}\r\n" for name, value in headers.items())
            data = (self.start + lines + "\r\n").encode("latin-1")
        else:  # no credentials (a plain-HTTP test server): no generator to join
            data = (self.start + "\r\n").encode("latin-1")
        body = self.body
        return data + body if body else data


def unary_request(
    target: str,
    fixed_head: str,
    method: str,
    params: Params | None,
    body: bytes | None,
    content_type: str,
    accept: str,
    limit: float,
    gate: WriteGate | None,
) -> Unary:
    """The request line and fixed headers of a request to `target` (the server's base path and the API
    path), its time limit, and the write gate of a mutating one (checked now too: a write refused now need
    not wait for a token; the pool checks again right before sending)."""
    if _NEEDS_QUOTING(target):
        target = quote(target, safe=_PATH_SAFE)
    if params:
        target += "?" + urlencode(params, quote_via=quote)
    start = f"{method} {target} HTTP/1.1\r\n{fixed_head}Accept: {accept}\r\n"
    if body is not None:
        start += f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
    elif method in ("POST", "PUT", "PATCH"):
        start += "Content-Length: 0\r\n"
    if method not in MUTATING_METHODS:
        gate = None
    elif gate is not None:
        gate()
    return Unary(start, body, limit, gate)


def _header_value(value: str) -> str:
    """A header value as sent; a line break inside one would split the request (header injection)."""
    if "\r" in value or "\n" in value:
        raise ValueError("a request header value contains a line break")
    return value
