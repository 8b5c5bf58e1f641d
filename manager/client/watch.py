"""A watch response as an async iterator of `(event_type, object)` pairs read from newline-framed JSON.

Each line is decoded once with orjson, straight from the network read's buffer (lines are spans of it, not
copies). The caller owns reconnection and resourceVersion bookkeeping (the reflector does it); this class
only frames, decodes and closes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson
import structlog

log = structlog.get_logger(__name__)

WatchEvent = tuple[str, dict[str, Any]]
Span = tuple[bytes, int, int]  # one line: buffer[start:end], without its newline


def decode_watch_line(line: bytes | memoryview) -> WatchEvent:
    """Decode one watch line into `(type, object)`; raises ValueError when it is not a watch event."""
    event = orjson.loads(line)
    if not isinstance(event, dict):
        raise ValueError("watch event is not a JSON object")
    event_type = event.get("type")
    obj = event.get("object")
    if not isinstance(event_type, str) or not isinstance(obj, dict):
        raise ValueError("watch event lacks type or object")
    return event_type, obj


def decode_watch_span(buffer: bytes, start: int, end: int) -> WatchEvent:
    """`decode_watch_line(buffer[start:end])` without copying the line."""
    if start == 0 and end == len(buffer):
        return decode_watch_line(buffer)
    return decode_watch_line(memoryview(buffer)[start:end])


def is_blank(buffer: bytes, start: int, end: int) -> bool:
    """Whether the line `buffer[start:end]` is empty or whitespace: not an event, and not an error."""
    return start == end or buffer[start:end].isspace()


def span_bytes(span: Span, limit: int | None = None) -> bytes:
    """The bytes of a span (at most `limit` of them): for error reports and plain-bytes consumers."""
    buffer, start, end = span
    if limit is not None:
        end = min(end, start + limit)
    return buffer if start == 0 and end == len(buffer) else buffer[start:end]


class WatchStream:
    """An open watch: `async with client.watch(...) as stream: async for type, obj in stream: ...`.

    Plain `async for` works too and closes the response when the stream ends. ERROR events are yielded as
    `("ERROR", status)`; use `manager.client.errors.error_from_status` to turn them into exceptions.
    Undecodable lines are skipped and counted in `decode_errors`.
    """

    def __init__(self, opener: Any) -> None:
        # A coroutine function returning the open response (status already checked): a StreamResponse of
        # manager/client/stream11.py, or anything with its `.content.iter_any()` and `.close()`.
        self._opener = opener
        self._response: Any = None
        self._iterator: AsyncIterator[WatchEvent] | None = None
        self._unread: list[list[Span]] = []
        self._pending: list[bytes | memoryview] = []  # the incomplete last line of the latest read
        self.decode_errors = 0
        self.events = 0

    async def open(self) -> WatchStream:
        """Send the request; raises the typed API error when the server refuses the watch."""
        if self._response is None:
            self._response = await self._opener()
        return self

    async def __aenter__(self) -> WatchStream:
        return await self.open()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._response is not None:
            self._response.close()
            self._response = None

    def __aiter__(self) -> AsyncIterator[WatchEvent]:
        if self._iterator is None:
            self._iterator = self._events()
        return self._iterator

    def unread(self, spans: list[Span]) -> None:
        """Give back lines a consumer took but did not process; `spans` yields them first."""
        if spans:
            self._unread.append(spans)

    async def spans(self) -> AsyncIterator[list[Span]]:
        """The complete lines of each network read as `(buffer, start, end)` spans (empty lines included).

        For consumers that decode a whole batch in one synchronous block (the reflector does). Lines are
        not copied out of the read's buffer (a copy of every line is a measurable share of the decode);
        only a line split across reads is joined, once, without quadratic copying. The partial line
        lives on the stream, not in the generator, so a consumer may stop iterating and call `spans()` again
        (the streaming list does, after its end bookmark) without losing bytes.
        """
        await self.open()
        response = self._response
        assert response is not None
        while self._unread:
            yield self._unread.pop(0)
        pending = self._pending
        async for chunk in response.content.iter_any():
            end = chunk.find(b"\n")
            if end < 0:
                pending.append(chunk)
                continue
            spans: list[Span] = []
            if pending:
                pending.append(memoryview(chunk)[:end])
                joined = b"".join(pending)
                pending.clear()
                spans.append((joined, 0, len(joined)))
            else:
                spans.append((chunk, 0, end))
            start = end + 1
            find = chunk.find
            while (end := find(b"\n", start)) >= 0:
                spans.append((chunk, start, end))
                start = end + 1
            if start < len(chunk):
                pending.append(memoryview(chunk)[start:])
            yield spans
        if pending:
            rest = b"".join(pending)
            pending.clear()
            yield [(rest, 0, len(rest))]

    async def _events(self) -> AsyncIterator[WatchEvent]:
        try:
            async for spans in self.spans():
                for buffer, start, end in spans:
                    try:
                        event = decode_watch_span(buffer, start, end)
                    except ValueError:
                        if is_blank(buffer, start, end):
                            continue
                        self.decode_errors += 1
                        log.warning("undecodable watch line skipped", size=end - start)
                        continue
                    self.events += 1
                    yield event
        finally:
            await self.aclose()
