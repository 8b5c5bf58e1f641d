"""Open HTTP watches: each one is a `WatchStream` buffer fed synchronously by store events and drained by its
HTTP handler in batches, so one event's bytes (serialised once in the store) fan out to every watcher."""

from __future__ import annotations

import asyncio
import contextlib

MAX_BUFFERED = 100_000  # live events queued for one watcher before it counts as too slow


class WatchStream:
    """Lines waiting to be written to one watch response.

    Only live events count toward `limit`: the initial events (a streaming list's or a plain watch's synthetic
    ADDED events, a resumed watch's replay from history) are queued in one go before anything is written, so
    a list larger than the limit would otherwise drop every watch of it at once and the client would relist
    forever. Likewise the apiserver's cacher sends a watcher's initial events from the watcher's own goroutine
    (cacheWatcher.processInterval) and drops only a watcher whose buffer of live events stays full
    (cacheWatcher.add)."""

    __slots__ = ("_initial", "_wakeup", "buffer", "closed", "error", "limit")

    def __init__(self, limit: int = MAX_BUFFERED) -> None:
        self.buffer: list[bytes] = []
        self.closed = False
        self.error: bytes | None = None  # a final ERROR line to send before closing
        self.limit = limit
        self._initial = 0  # lines in `buffer` pushed by push_initial
        self._wakeup = asyncio.Event()

    def push(self, line: bytes) -> None:
        if self.closed:
            return
        self.buffer.append(line)
        if len(self.buffer) == 1:
            self._wakeup.set()
        elif len(self.buffer) - self._initial > self.limit:
            self.close()  # a consumer this far behind is dropped (as the apiserver does); it resumes

    def push_initial(self, line: bytes) -> None:
        """Queue an initial event: never counts toward the slow-watcher limit."""
        if self.closed:
            return
        self.buffer.append(line)
        self._initial += 1
        if len(self.buffer) == 1:
            self._wakeup.set()

    def close(self, error_line: bytes | None = None) -> None:
        self.error = error_line
        self.closed = True
        self._wakeup.set()

    async def wait(self, timeout: float | None) -> None:
        """Return when there is something to write, the stream closed, or `timeout` passed."""
        if self.buffer or self.closed:
            return
        self._wakeup.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wakeup.wait(), timeout)

    def drain(self) -> bytes:
        data = b"".join(self.buffer)
        self.buffer.clear()
        self._initial = 0
        return data


class WatchHub:
    """Tracks every open watch so faults (and shutdown) can end them all at once; `max_buffered` is the
    slow-watcher limit of the streams it opens."""

    def __init__(self, max_buffered: int = MAX_BUFFERED) -> None:
        self._streams: set[WatchStream] = set()
        self.max_buffered = max_buffered

    def open(self) -> WatchStream:
        stream = WatchStream(self.max_buffered)
        self._streams.add(stream)
        return stream

    def release(self, stream: WatchStream) -> None:
        self._streams.discard(stream)

    def close_all_watches(self) -> int:
        """End every open watch now (clients see the stream end cleanly and re-watch). Returns how many."""
        streams = list(self._streams)
        for stream in streams:
            stream.close()
        return len(streams)

    @property
    def open_count(self) -> int:
        return len(self._streams)
