"""kubesim's JSON answers (an object, a list, a Status) built as aiohttp's `web.Response(body=...,
status=..., content_type="application/json")` would build them, without its constructor's argument handling
(three __init__ layers, the content-type and charset checks, the body setter): one per request.

The result is a plain `web.Response` with the same instance state, which `IDENTICAL` checks once against
the constructor's own on the installed aiohttp; if they differ, the constructor is used."""

from __future__ import annotations

from typing import Any

from aiohttp import hdrs, web
from multidict import CIMultiDict

JSON_CT = "application/json"
_JSON_HEADERS: CIMultiDict[str] = CIMultiDict({hdrs.CONTENT_TYPE: JSON_CT})
_REASONS: dict[int, str] = {}


def _built(body: bytes, status: int) -> web.Response:
    response: web.Response = web.Response.__new__(web.Response)
    reason = _REASONS.get(status)
    if reason is None:
        reason = _REASONS[status] = web.Response(status=status)._reason
    state = response.__dict__
    state["_state"] = {}
    state["_headers"] = _JSON_HEADERS.copy()
    state["_status"] = status
    state["_reason"] = reason
    state["_body"] = body
    state["_compressed_body"] = None
    state["_zlib_executor_size"] = _ZLIB_SIZE
    state["_zlib_executor"] = None
    return response


def _state(response: web.Response) -> dict[str, Any]:
    state = dict(vars(response))
    state["_headers"] = list(response.headers.items())
    return state


_ZLIB_SIZE = vars(web.Response()).get("_zlib_executor_size")
IDENTICAL = all(
    _state(_built(body, status)) == _state(web.Response(body=body, status=status, content_type=JSON_CT))
    for body, status in ((b"{}", 201), (b"", 200), (b'{"kind":"Status"}', 404))
)


def json_response(body: bytes, status: int = 200) -> web.Response:
    """`web.Response(body=body, status=status, content_type="application/json")`."""
    if IDENTICAL and type(body) is bytes:
        return _built(body, status)
    return web.Response(body=body, status=status, content_type=JSON_CT)
