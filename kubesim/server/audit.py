"""An audit log of mutating requests, one JSON line each, like kube-apiserver's `--audit-log-path`.

Each line: `time` (when the request was received, Unix seconds), `verb` (the audit verb: create, update,
patch, delete, deletecollection), `path` (path and query), `code` (the status answered, 0 when the client went
away first), `userAgent`, and `peer` (the client's `ip:port`, so a test can tell which process wrote: the port
is that of the client's socket). Injected faults are logged with the code they answered, as they are
requests the server received. Each line is flushed as it is written, so a reader tailing the file sees it at
once and a killed server loses nothing it answered.

The `kubesim` command enables it with `--audit-log-path FILE` (`enable`); `build_app` installs the
middleware of the enabled log, outermost, so it sees every answer.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import IO, Any

import orjson
from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
Middleware = Callable[[web.Request, Handler], Awaitable[web.StreamResponse]]

_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch"}
_API_PREFIXES = ("/api/", "/apis/")


def audit_verb(method: str, path: str) -> str | None:
    """The audit verb of a mutating API request; None for reads and for non-API paths."""
    if not path.startswith(_API_PREFIXES):
        return None
    if method == "DELETE":
        # a named object has a name after its resource: /api/v1/namespaces/ns/pods/name has 6 parts
        parts = [p for p in path.split("/") if p]
        resource_at = 2 if parts[0] == "api" else 3
        if len(parts) > resource_at and parts[resource_at] == "namespaces" and len(parts) > resource_at + 2:
            resource_at += 2
        return "delete" if len(parts) > resource_at + 1 else "deletecollection"
    return _VERBS.get(method)


class AuditLog:
    """Appends one line per mutating request to `path` (created if missing, never truncated)."""

    def __init__(self, path: str | Path, clock: Callable[[], float] = time.time) -> None:
        self.path = Path(path)
        self._clock = clock
        self._file: IO[bytes] = open(self.path, "ab", buffering=0)  # noqa: SIM115 - lives as long as the server

    def close(self) -> None:
        self._file.close()

    def record(self, request: web.Request, verb: str, received: float, code: int, peer: str) -> None:
        line: dict[str, Any] = {
            "time": received,
            "verb": verb,
            "path": request.path_qs,
            "code": code,
            "userAgent": request.headers.get("User-Agent", ""),
            "peer": peer,
        }
        self._file.write(orjson.dumps(line) + b"\n")

    @property
    def middleware(self) -> Middleware:
        @web.middleware
        async def kubesim_audit(request: web.Request, handler: Handler) -> web.StreamResponse:
            verb = audit_verb(request.method, request.path)
            if verb is None:
                return await handler(request)
            # the peer is read first: the transport is gone once a client has hung up
            received, peer = self._clock(), _peer(request)
            code = 0
            try:
                response = await handler(request)
                code = response.status
                return response
            except web.HTTPException as exc:
                code = exc.status
                raise
            except Exception:
                code = 500
                raise
            finally:
                self.record(request, verb, received, code, peer)

        return kubesim_audit


def _peer(request: web.Request) -> str:
    transport = request.transport
    peer = transport.get_extra_info("peername") if transport is not None else None
    if isinstance(peer, tuple) and len(peer) >= 2:
        return f"{peer[0]}:{peer[1]}"
    return ""


_enabled: AuditLog | None = None


def enable(path: str | Path) -> AuditLog:
    """Audit every application built from now on in this process (the `kubesim` command's one server)."""
    global _enabled
    _enabled = AuditLog(path)
    return _enabled


def middlewares() -> list[Middleware]:
    """The enabled log's middleware, or none."""
    return [] if _enabled is None else [_enabled.middleware]
