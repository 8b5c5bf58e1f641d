"""The floor of a unary API request in Python on this event loop, for benchmarks/client_requests.py: the least
a keep-alive HTTP/1.1 request can cost. One `transport.write` of prebuilt request bytes, the answer parsed
with httptools in an `asyncio.Protocol`, its body decoded with orjson; no URL building, no headers beyond the
required ones, no timeout, no metrics, no retries, no rate limiter, no error mapping. Not a client: nothing
here handles a server that closes a connection or answers garbage."""

from __future__ import annotations

import asyncio
from typing import Any

import httptools
import orjson


class _Connection(asyncio.Protocol):
    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.body: list[bytes] = []
        self.waiter: asyncio.Future[tuple[int, bytes]] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.parser.feed_data(data)

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        assert self.waiter is not None
        self.waiter.set_result((self.parser.get_status_code(), b"".join(self.body)))
        self.body = []


class FloorClient:
    """Keep-alive connections to host:port (`open(n)`); `call(method, path, body)` decodes the answer."""

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        self._idle: list[_Connection] = []
        self._head = f"Host: {host}:{port}\r\nAccept: application/json\r\n".encode()

    async def open(self, connections: int) -> None:
        loop = asyncio.get_running_loop()
        for _ in range(connections):
            _, connection = await loop.create_connection(_Connection, self.host, self.port)
            self._idle.append(connection)

    async def call(
        self, method: str, path: str, body: bytes = b"", content_type: str = "application/json"
    ) -> Any:
        connection = self._idle.pop()
        request = f"{method} {path} HTTP/1.1\r\n".encode() + self._head
        if body:
            request += f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body
        else:
            request += b"\r\n"
        connection.waiter = asyncio.get_running_loop().create_future()
        assert connection.transport is not None
        connection.transport.write(request)
        status, payload = await connection.waiter
        self._idle.append(connection)
        if status >= 300:
            raise RuntimeError(f"{method} {path}: {status}")
        return orjson.loads(payload)

    def close(self) -> None:
        for connection in self._idle:
            if connection.transport is not None:
                connection.transport.close()
