"""A request body that has fully arrived, taken from aiohttp's StreamReader without its resume round trip.

`StreamReader.read_nowait()` ends every read that leaves the buffer under its low-water mark with
`protocol.resume_reading()`, which feeds the HTTP parser an empty chunk (`data_received(b"")`) and asks the
transport to resume reading: two Python calls, a parser call and a transport call per request, all of them
no-ops unless reading was paused. Reading is paused only by flow control (`_reading_paused`: the body
passed twice the reader's limit) or by a full message queue (`_buffer_paused`, which is also the only time
the parser holds back bytes of pipelined requests). When neither holds, the reader holds no exception and
its single buffered chunk is the whole body, `take` hands it over with the reader's bookkeeping done as
`read_nowait` does it, and skips the resume. Anything else, or an aiohttp whose reader or protocol lacks
the state read here (`SUPPORTED`), gets `read_nowait()` itself."""

from __future__ import annotations

from typing import Any

from aiohttp import base_protocol, streams

_READER_STATE = (
    "_buffer",
    "_buffer_offset",
    "_size",
    "_cursor",
    "_http_chunk_splits",
    "_timer",
    "_protocol",
    "_exception",
    "_waiter",
)
_PROTOCOL_STATE = ("_reading_paused", "_buffer_paused")


def supported() -> bool:
    """The installed aiohttp keeps the state `take` reads, under those names."""
    reader_slots = set(getattr(streams.StreamReader, "__slots__", ()))
    protocol_slots = set(getattr(base_protocol.BaseProtocol, "__slots__", ()))
    return reader_slots.issuperset(_READER_STATE) and protocol_slots.issuperset(_PROTOCOL_STATE)


SUPPORTED = supported()


def take(content: Any, length: int) -> bytes:
    """The body of `length` bytes that `content` (at EOF, `total_bytes == length`) holds: what
    `content.read_nowait()` returns."""
    if SUPPORTED and type(content) is streams.StreamReader:
        buffer = content._buffer
        protocol = content._protocol
        if (
            len(buffer) == 1
            and content._exception is None  # read_nowait raises it: let it
            and content._waiter is None
            and not content._buffer_offset
            and content._http_chunk_splits is None
            and not protocol._reading_paused
            and not protocol._buffer_paused
        ):
            content._timer.assert_timeout()
            data: bytes = buffer.popleft()
            if len(data) == length:
                content._size -= length
                content._cursor += length
                return data
            buffer.appendleft(data)  # not the body alone after all: leave it to the reader
    rest: bytes = content.read_nowait()
    return rest
