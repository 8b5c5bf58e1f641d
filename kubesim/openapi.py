"""/openapi/v2 and /openapi/v3 from the real schemas (stub: filled in next commit)."""

from __future__ import annotations

from typing import Any, Protocol

from aiohttp import web


class TypeRegistry(Protocol):
    """What openapi needs from kubesim-core's registry (see add_routes)."""

    def openapi_types(self) -> list[Any]: ...


def add_routes(app: web.Application, registry: Any) -> None:
    """Serve /openapi/v2, /openapi/v3 and /openapi/v3/{path}."""
    return None
