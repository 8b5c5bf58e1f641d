"""A lean HTTP/1.1 keep-alive connection pool for unary API requests (everything but watches).

Why not aiohttp here: a controller's steady state is many small requests (create a pod, update a status,
post an Event), and aiohttp's per-request machinery (URL objects, header multidicts, payload writers,
response streams, timer contexts) is a large share of a controller's CPU. This pool writes each request
with one `transport.write` and parses the answer with httptools (llhttp, the parser behind Node.js and
uvicorn) in an `asyncio.Protocol`, which does much less per request (figures: docs/design/performance.md;
benchmarks/client_requests.py compares the two). Watches get a connection each, built the same way, from
manager/client/stream11.py.

Failure classes, as the retry logic in transport.py needs them: `ConnectError` (nothing reached the
server; any verb may be retried) and `Disconnected` (the connection broke after the request was written;
the server may have processed it). A timeout raises `TimeoutError` and closes the connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections import deque
from collections.abc import Callable
from typing import cast

import httptools

_NO_BODY = b""
_CLOCK_RESOLUTION = time.get_clock_info("monotonic").resolution  # the loop fires a timer this early


class ConnectError(ConnectionError):
    """The connection could not be opened: the request was never sent."""


class Disconnected(ConnectionError):
    """The connection closed or broke before a complete answer: the request may have been processed."""


class Answer:
    """One complete HTTP response."""

    __slots__ = ("body", "headers", "status")

    def __init__(
        self, status: int, headers: dict[bytes, bytes] | None = None, body: bytes = _NO_BODY
    ) -> None:
        self.status = status
        self.headers = {} if headers is None else headers  # name as sent -> its first value
        self.body = body

    def header(self, name: str) -> str | None:
        """The first value of a header (case-insensitive), or None."""
        return header_value(self.headers, name)


def header_value(headers: dict[bytes, bytes], name: str) -> str | None:
    """The value of header `name` (case-insensitive) in headers collected as name -> first value."""
    wanted = name.lower().encode("latin-1")
    for key, value in headers.items():
        if key.lower() == wanted:
            return value.decode("latin-1")
    return None


def is_sized(headers: dict[bytes, bytes]) -> bool:
    """Whether an answer carries Content-Length or chunked framing: without either, the end of the
    connection delimits it (looked up only when a connection ends mid-answer, not per header)."""
    return any(name.lower() in (b"content-length", b"transfer-encoding") for name in headers)


class _Connection(asyncio.Protocol):
    """One keep-alive connection; carries one request at a time (no pipelining, like Go's client)."""

    def __init__(self, pool: Http11Pool) -> None:
        self._pool = pool
        self._transport: asyncio.Transport | None = None
        self._waiter: asyncio.Future[Answer] | None = None
        # The answer being read. httptools binds its callbacks once, when the parser is made: the per-header
        # and per-chunk ones are these containers' own methods (no Python frame per header or chunk), and
        # the containers are emptied after each answer rather than replaced.
        self._headers: dict[bytes, bytes] = {}
        self._body: list[bytes] = []
        self.on_header = self._headers.setdefault  # the first value of a repeated header wins
        self.on_body = self._body.append
        self._status = 0
        self._parser = httptools.HttpResponseParser(self)
        self.closed = False

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A cast, not an isinstance check: uvloop's transports do not subclass asyncio.Transport.
        self._transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        if self._waiter is None:
            # Bytes nobody asked for (a server must not send them): the connection state is unknown.
            self.close()
            return
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._fail(Disconnected("unexpected protocol upgrade"))
        except httptools.HttpParserError as exc:
            self._fail(Disconnected(f"malformed HTTP response: {exc}"))

    def eof_received(self) -> bool:
        self._end_of_stream()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._end_of_stream(exc)

    # httptools callbacks

    def on_headers_complete(self) -> None:
        self._status = self._parser.get_status_code()

    def on_message_complete(self) -> None:
        headers, chunks = self._headers, self._body
        # One chunk (the usual answer) is the body itself: b"".join of one bytes object returns it uncopied.
        answer = Answer(self._status, headers.copy(), b"".join(chunks))
        headers.clear()
        chunks.clear()
        self._status = 0
        keep_alive = self._parser.should_keep_alive()
        waiter, self._waiter = self._waiter, None
        if not keep_alive:
            self.close()
        if waiter is not None and not waiter.done():
            waiter.set_result(answer)

    # used by the pool

    def send(self, data: bytes, waiter: asyncio.Future[Answer]) -> None:
        if self.closed or self._transport is None:
            # Closed by the server between connecting and sending: nothing was sent.
            waiter.set_exception(ConnectError("the connection closed before the request was sent"))
            return
        self._waiter = waiter
        self._transport.write(data)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._pool._forget(self)
            if self._transport is not None:
                self._transport.close()

    def _end_of_stream(self, exc: Exception | None = None) -> None:
        if self._waiter is not None and self._status and not is_sized(self._headers):
            # An answer delimited by the end of the connection (no length, not chunked): it is complete.
            self.on_message_complete()
        reason = f"server closed the connection: {exc}" if exc else "server closed the connection"
        self._fail(Disconnected(reason))

    def _fail(self, error: Exception) -> None:
        waiter, self._waiter = self._waiter, None
        self.close()
        if waiter is not None and not waiter.done():
            waiter.set_exception(error)


class _Slots:
    """At most `limit` holders, served in order: asyncio.Semaphore's semantics without its coroutines and
    wake-up bookkeeping when a slot is free (almost always: the pool allows 100 requests at once)."""

    __slots__ = ("free", "waiters")

    def __init__(self, limit: int) -> None:
        self.free = limit
        self.waiters: deque[asyncio.Future[None]] = deque()

    async def take(self) -> None:
        """Wait until a holder gives its slot back (it is handed over, not put back and raced for)."""
        waiter = asyncio.get_running_loop().create_future()
        self.waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.give_back()  # handed a slot, then cancelled before using it: pass it on
            else:
                with contextlib.suppress(ValueError):
                    self.waiters.remove(waiter)
            raise

    def give_back(self) -> None:
        while self.waiters:
            waiter = self.waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self.free += 1


class Http11Pool:
    """Keep-alive connections to one server, at most `limit` open at once."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        ssl_context: ssl.SSLContext | None = None,
        server_hostname: str | None = None,
        limit: int = 100,
        connect_timeout: float = 10.0,
    ) -> None:
        self.host = host
        self.port = port
        self.ssl_context = ssl_context
        self.server_hostname = server_hostname
        self.connect_timeout = connect_timeout
        self._idle: list[_Connection] = []
        self._open: set[_Connection] = set()
        self._slots = _Slots(limit)
        self._generation = 0  # connections from an older generation are not reused
        # Request timeouts: the deadline of each answer awaited, and one timer, never later than the earliest
        # of them. The timer is not cancelled when its request is answered: paced traffic (one request in
        # flight at a time) would otherwise arm and cancel a loop timer per request. It stays armed; when it
        # fires it fails what is due and re-arms for the earliest deadline still awaited, or goes idle when
        # nothing is. So an idle process wakes at most once, at most one timeout after its last request.
        self._deadlines: dict[asyncio.Future[Answer], float] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._timer_when = 0.0  # the timer's time (TimerHandle.when() without the call)
        self._timer_loop: asyncio.AbstractEventLoop | None = None

    @property
    def open_connections(self) -> int:
        return len(self._open)

    async def request(
        self, data: bytes, timeout: float | None, *, gate: Callable[[], None] | None = None
    ) -> Answer:
        """Send one serialised request and return the complete answer.

        `gate`, when given, runs right before the request is written, after any wait for a connection:
        whatever it raises refuses the request, with nothing sent."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        slots = self._slots
        # The common cases inline (a free slot, an idle connection): a method call fewer each, per request.
        if slots.free > 0 and not slots.waiters:
            slots.free -= 1
        else:
            await slots.take()
        try:
            idle = self._idle
            connection = idle.pop() if idle else None
            if connection is None or connection.closed:
                connection = self._take_idle() or await self._connect(timeout)
            generation = self._generation
            if gate is not None:
                try:
                    gate()
                except BaseException:
                    self._idle.append(connection)  # unused: it stays open for the next request
                    raise
            waiter: asyncio.Future[Answer] = loop.create_future()
            if deadline is not None:
                self._deadlines[waiter] = deadline
                if self._timer is None or deadline < self._timer_when or self._timer_loop is not loop:
                    self._arm(loop, deadline)
            connection.send(data, waiter)
            try:
                answer = await waiter
            except BaseException:
                connection.close()  # timed out or cancelled mid-answer: the connection's state is unknown
                raise
            finally:
                if deadline is not None:
                    del self._deadlines[waiter]  # the timer stays armed (see __init__)
            if generation != self._generation:
                connection.close()
            elif not connection.closed:
                self._idle.append(connection)
            return answer
        finally:
            if slots.waiters:
                slots.give_back()
            else:
                slots.free += 1

    def close(self) -> None:
        for connection in list(self._open):
            connection.close()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _arm(self, loop: asyncio.AbstractEventLoop, when: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = loop.call_at(when, self._expire_due, loop)
        self._timer_when = when
        self._timer_loop = loop

    def _expire_due(self, loop: asyncio.AbstractEventLoop) -> None:
        """Fail every answer awaited past its deadline; arm the timer for the earliest remaining one, or
        leave it unarmed when nothing is awaited (an idle process then has no timer at all)."""
        self._timer = None
        now = loop.time() + _CLOCK_RESOLUTION
        earliest = None
        for waiter, deadline in list(self._deadlines.items()):
            if deadline <= now:
                if not waiter.done():
                    waiter.set_exception(TimeoutError("no complete answer before the request timeout"))
            elif earliest is None or deadline < earliest:
                earliest = deadline
        if earliest is not None:
            self._arm(loop, earliest)

    def close_idle(self) -> None:
        """Close the connections not carrying a request (e.g. opened with a client certificate since
        replaced); busy ones finish their request and are closed when they come back."""
        self._generation += 1
        for connection in list(self._idle):
            connection.close()

    def _take_idle(self) -> _Connection | None:
        while self._idle:
            connection = self._idle.pop()
            if not connection.closed:
                return connection
        return None

    async def _connect(self, timeout: float | None) -> _Connection:
        loop = asyncio.get_running_loop()
        limit = self.connect_timeout if timeout is None else min(timeout, self.connect_timeout)
        try:
            async with asyncio.timeout(limit):
                _, connection = await loop.create_connection(
                    lambda: _Connection(self),
                    self.host,
                    self.port,
                    ssl=self.ssl_context,
                    server_hostname=(self.server_hostname or self.host) if self.ssl_context else None,
                )
        except (OSError, TimeoutError) as exc:
            raise ConnectError(f"cannot connect to {self.host}:{self.port}: {exc or 'timed out'}") from exc
        self._open.add(connection)
        return connection

    def _forget(self, connection: _Connection) -> None:
        self._open.discard(connection)
        if connection in self._idle:
            self._idle.remove(connection)
