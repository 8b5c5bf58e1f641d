"""One streamed HTTP/1.1 response on a connection of its own: how the manager reads a watch.

Built like the unary pool of http11.py (an `asyncio.Protocol` fed by httptools, the request written with one
`transport.write`), because in a paced workload every watch read is its own event-loop wake-up, and
aiohttp's per-read path (stream reader, waiter futures, a read timer re-armed per read, flow-control
bookkeeping) was a visible share of the manager's CPU. Per network read this does: one httptools feed (the
chunked framing is decoded there, `on_body`), one append to a deque, and, only when the consumer is
waiting, one future set. The read-idle timeout is one timer that looks at the time of the last read when it
fires and re-arms for the remainder, never re-armed per read.

The consumer sees what WatchStream reads from an aiohttp response: `.status`, `.content.iter_any()` (an
async iterator of byte chunks, all that is buffered at once) and `.close()`. The connection is never reused:
it closes when the stream ends, is closed, or its reader is cancelled. A clean end of the response (the
terminating chunk, or the end of a response delimited by the connection) ends the iterator; a connection
lost mid-response raises `Disconnected`, a silent stream `TimeoutError`, a refused connection `ConnectError`.
"""

from __future__ import annotations

import asyncio
import ssl
import zlib
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import cast

import httptools

from manager.client.http11 import ConnectError, Disconnected, header_value, is_sized

# Pause reading from the socket above this many unconsumed bytes; resume when the consumer has taken them
# (it takes all that is buffered at once). A few socket reads' worth (the loop reads up to 256 KiB at a
# time): a consumer behind its stream then holds at most ~1 MiB per watch, the same order as the aiohttp
# session this replaces (read_bufsize 1 MiB: pause above 2 MiB), while a reflector catching up on a large
# initial list still decodes big batches per wake-up.
HIGH_WATER = 2**20
_ENCODINGS = {b"gzip": 16 + zlib.MAX_WBITS, b"x-gzip": 16 + zlib.MAX_WBITS, b"deflate": zlib.MAX_WBITS}


class StreamResponse(asyncio.Protocol):
    """One HTTP/1.1 response read as a stream (and the connection carrying it)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, idle_timeout: float | None) -> None:
        self._loop = loop
        self._parser = httptools.HttpResponseParser(self)
        self._transport: asyncio.Transport | None = None
        self._chunks: deque[bytes] = deque()
        self._read: list[bytes] = []  # the body pieces of the network read being parsed
        self._buffered = 0
        self._waiter: asyncio.Future[None] | None = None
        self._error: BaseException | None = None
        self._headers: dict[bytes, bytes] = {}
        self._decompress: zlib._Decompress | None = None
        self._head = False
        self._complete = False
        self._paused = False
        self.closed = False
        self.status = 0
        self.content = self  # what WatchStream reads: `response.content.iter_any()`
        self.on_close: Callable[[StreamResponse], None] | None = None  # called once, when it closes
        # The read-idle timeout: the time of the latest read, and one timer checking it.
        self._idle_timeout = idle_timeout
        self._last_read = loop.time()
        self._timer: asyncio.TimerHandle | None = None
        if idle_timeout is not None:
            self._timer = loop.call_at(self._last_read + idle_timeout, self._check_idle)

    def header(self, name: str) -> str | None:
        """The first value of a response header (case-insensitive), or None."""
        return header_value(self._headers, name)

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # uvloop's do not subclass asyncio.Transport

    def data_received(self, data: bytes) -> None:
        self._last_read = self._loop.time()
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._fail(Disconnected("unexpected protocol upgrade"))
            return
        except (httptools.HttpParserError, zlib.error, ValueError) as exc:
            self._fail(Disconnected(f"malformed HTTP response: {exc}"))
            return
        read = self._read
        if read:
            chunk = read[0] if len(read) == 1 else b"".join(read)
            read.clear()
            self._chunks.append(chunk)
            self._buffered += len(chunk)
            if self._buffered > HIGH_WATER and not self._paused and self._transport is not None:
                self._paused = True
                self._transport.pause_reading()
            self._wake()

    def eof_received(self) -> bool:
        self._end_of_stream(None)
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._end_of_stream(exc)

    # httptools callbacks

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers.setdefault(name, value)  # the first value of a repeated header, as header() reads

    def on_headers_complete(self) -> None:
        self.status = self._parser.get_status_code()
        self._head = True
        encoding = self.header("Content-Encoding")
        if encoding:
            wbits = _ENCODINGS.get(encoding.strip().lower().encode("latin-1"))
            if wbits is None and encoding.strip().lower() != "identity":
                raise ValueError(f"unsupported Content-Encoding {encoding!r}")
            if wbits is not None:
                self._decompress = zlib.decompressobj(wbits)
        self._wake()

    def on_body(self, body: bytes) -> None:
        if self._decompress is not None:
            body = self._decompress.decompress(body)
            if not body:
                return
        self._read.append(body)

    def on_message_complete(self) -> None:
        if self._decompress is not None:
            rest = self._decompress.flush()
            if rest:
                self._read.append(rest)
        self._complete = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._wake()

    # the reader's side

    async def head(self) -> None:
        """Wait for the status line and headers."""
        while not self._head:
            await self._wait()

    async def body(self) -> bytes:
        """The whole (small) body of an error answer; closes the connection."""
        try:
            return b"".join([chunk async for chunk in self.iter_any()])
        finally:
            self.close()

    async def iter_any(self) -> AsyncIterator[bytes]:
        """The body as it arrives: each item is everything buffered at that moment."""
        chunks = self._chunks
        while True:
            if chunks:
                data = chunks.popleft() if len(chunks) == 1 else b"".join(chunks)
                chunks.clear()
                self._buffered = 0
                if self._paused:
                    self._resume()
                yield data
            elif self._error is not None:
                raise self._error
            elif self._complete:
                self.close()
                return
            else:
                await self._wait()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if self._transport is not None:
                self._transport.close()
            if self.on_close is not None:
                self.on_close(self)

    # internals

    async def _wait(self) -> None:
        if self._error is not None:
            raise self._error
        waiter = self._waiter = self._loop.create_future()
        try:
            await waiter
        except asyncio.CancelledError:
            self.close()  # a reader cancelled mid-stream: nobody is left to read this connection
            raise
        finally:
            self._waiter = None

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _resume(self) -> None:
        self._paused = False
        self._last_read = self._loop.time()  # a paused stream was not silent: its reader was busy
        if self._transport is not None and not self.closed:
            self._transport.resume_reading()

    def _check_idle(self) -> None:
        self._timer = None
        if self.closed or self._idle_timeout is None:
            return
        now = self._loop.time()
        if self._paused:
            self._last_read = now  # waiting on the reader, not on the server
        due = self._last_read + self._idle_timeout
        if due > now:
            self._timer = self._loop.call_at(due, self._check_idle)
            return
        self._fail(TimeoutError(f"no data from the server for {self._idle_timeout:g} s"))

    def _end_of_stream(self, exc: Exception | None) -> None:
        if not self._complete and self._head and not is_sized(self._headers):
            self.on_message_complete()  # a response delimited by the end of the connection: complete
        if not self._complete:
            reason = f"server closed the connection: {exc}" if exc else "server closed the connection"
            self._fail(Disconnected(reason))
        else:
            self.close()

    def _fail(self, error: BaseException) -> None:
        if self._error is None and not self._complete:
            self._error = error
        self.close()
        self._wake()


async def open_stream(
    host: str,
    port: int,
    request: bytes,
    *,
    ssl_context: ssl.SSLContext | None,
    server_hostname: str | None,
    connect_timeout: float,
    idle_timeout: float | None,
) -> StreamResponse:
    """Connect, send `request` and return the response once its head has arrived (the body unread)."""
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(connect_timeout):
            _, response = await loop.create_connection(
                lambda: StreamResponse(loop, idle_timeout),
                host,
                port,
                ssl=ssl_context,
                server_hostname=(server_hostname or host) if ssl_context else None,
            )
    except (OSError, TimeoutError) as exc:
        raise ConnectError(f"cannot connect to {host}:{port}: {exc or 'timed out'}") from exc
    try:
        if response.closed or response._transport is None:
            raise ConnectError("the connection closed before the request was sent")
        response._transport.write(request)
        await response.head()
    except BaseException:
        response.close()
        raise
    return response
