"""A watch response as an async iterator of `(event_type, object)` pairs read from newline-framed JSON.

Each line is decoded once with orjson; nothing else touches the bytes. The caller owns reconnection and
resourceVersion bookkeeping (the reflector does it); this class only frames, decodes and closes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from types import TracebackType
from typing import Any

import aiohttp
import orjson
import structlog

log = structlog.get_logger(__name__)

WatchEvent = tuple[str, dict[str, Any]]


def decode_watch_line(line: bytes) -> WatchEvent:
    """Decode one watch line into `(type, object)`; raises ValueError when it is not a watch event."""
    event = orjson.loads(line)
    if not isinstance(event, dict):
        raise ValueError("watch event is not a JSON object")
    event_type = event.get("type")
    obj = event.get("object")
    if not isinstance(event_type, str) or not isinstance(obj, dict):
        raise ValueError("watch event lacks type or object")
    return event_type, obj


class WatchStream:
    """An open watch: `async with client.watch(...) as stream: async for type, obj in stream: ...`.

    Plain `async for` works too and closes the response when the stream ends. ERROR events are yielded as
    `("ERROR", status)`; use `manager.client.errors.error_from_status` to turn them into exceptions.
    Undecodable lines are skipped and counted in `decode_errors`.
    """

    def __init__(self, opener: Any) -> None:
        self._opener = (
            opener  # coroutine function returning an open aiohttp response (status already checked)
        )
        self._response: aiohttp.ClientResponse | None = None
        self._iterator: AsyncIterator[WatchEvent] | None = None
        self._unread: list[list[bytes]] = []
        self._pending: list[bytes] = []  # the incomplete last line of the latest read
        self.decode_errors = 0
        self.events = 0

    async def open(self) -> WatchStream:
        """Send the request; raises the typed API error when the server refuses the watch."""
        if self._response is None:
            self._response = await self._opener()
        return self

    async def __aenter__(self) -> WatchStream:
        return await self.open()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._response is not None:
            self._response.close()
            self._response = None

    def __aiter__(self) -> AsyncIterator[WatchEvent]:
        if self._iterator is None:
            self._iterator = self._events()
        return self._iterator

    def unread(self, lines: list[bytes]) -> None:
        """Give back lines a consumer took but did not process; `line_batches` yields them first."""
        if lines:
            self._unread.append(lines)

    async def line_batches(self) -> AsyncIterator[list[bytes]]:
        """The complete lines of each network read, undecoded (empty lines included).

        For consumers that decode a whole batch in one synchronous block (the reflector does). An event
        split across reads is joined once, without quadratic copying. The partial line lives on the stream,
        not in the generator, so a consumer may stop iterating and call `line_batches()` again (the
        streaming list does, after its end bookmark) without losing bytes.
        """
        await self.open()
        response = self._response
        assert response is not None
        while self._unread:
            yield self._unread.pop(0)
        pending = self._pending
        async for chunk in response.content.iter_any():
            if b"\n" not in chunk:
                pending.append(chunk)
                continue
            if pending:
                pending.append(chunk)
                chunk = b"".join(pending)
                pending.clear()
            lines = chunk.split(b"\n")
            tail = lines.pop()
            if tail:
                pending.append(tail)
            yield lines
        if pending:
            rest = b"".join(pending)
            pending.clear()
            yield [rest]

    async def _events(self) -> AsyncIterator[WatchEvent]:
        try:
            async for lines in self.line_batches():
                for line in lines:
                    if not line or line.isspace():
                        continue
                    try:
                        event = decode_watch_line(line)
                    except ValueError:
                        self.decode_errors += 1
                        log.warning("undecodable watch line skipped", size=len(line))
                        continue
                    self.events += 1
                    yield event
        finally:
            await self.aclose()
