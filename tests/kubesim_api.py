"""A raw HTTP client for kubesim API tests: send exact bytes and headers, get (status, decoded body)."""

from __future__ import annotations

from typing import Any

import aiohttp
import orjson
from multidict import CIMultiDictProxy


class Api:
    def __init__(self, session: aiohttp.ClientSession, url: str) -> None:
        self.session = session
        self.url = url

    async def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str | None = "application/json",
        raw: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, Any]:
        """Send `raw` bytes or `body` as JSON; `content_type=None` sends no Content-Type at all."""
        status, payload, _ = await self.exchange(method, path, body, content_type, raw, headers)
        return status, payload

    async def exchange(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str | None = "application/json",
        raw: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, Any, CIMultiDictProxy[str]]:
        """`call`, also returning the response headers (Warning, ...)."""
        data = raw if raw is not None else (None if body is None else orjson.dumps(body))
        hdrs = dict(headers or {})
        if content_type:
            hdrs["Content-Type"] = content_type
        skip = () if content_type else ("Content-Type",)
        async with self.session.request(
            method, self.url + path, data=data, headers=hdrs, skip_auto_headers=skip
        ) as resp:
            payload = await resp.read()
            return resp.status, orjson.loads(payload) if payload else None, resp.headers

    async def ok(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str | None = "application/json",
        **kw: Any,
    ) -> Any:
        status, payload = await self.call(method, path, body, content_type, **kw)
        assert status < 300, (method, path, status, payload)
        return payload

    async def gone(self, path: str) -> bool:
        status, _ = await self.call("GET", path)
        return status == 404
