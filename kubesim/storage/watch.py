"""Open HTTP watches: each one is a `WatchStream` buffer fed synchronously by store events and drained by its
HTTP handler in batches, so one event's bytes (serialised once in the store) fan out to every watcher."""

from __future__ import annotations

import asyncio

MAX_BUFFERED = 100_000  # live events queued for one watcher before it counts as too slow


class WatchStream:
    """Lines waiting to be written to one watch response.

    Only live events count toward `limit`: the initial events (a streaming list's or a plain watch's synthetic
    ADDED events, a resumed watch's replay from history) are queued in one go before anything is written, so
    a list larger than the limit would otherwise drop every watch of it at once and the client would relist
    forever. Likewise the apiserver's cacher sends a watcher's initial events from the watcher's own goroutine
    (cacheWatcher.processInterval) and drops only a watcher whose buffer of live events stays full
    (cacheWatcher.add)."""

    __slots__ = ("_initial", "_timer", "_waiter", "buffer", "closed", "error", "limit")

    def __init__(self, limit: int = MAX_BUFFERED) -> None:
        self.buffer: list[bytes] = []
        self.closed = False
        self.error: bytes | None = None  # a final ERROR line to send before closing
        self.limit = limit
        self._initial = 0  # lines in `buffer` pushed by push_initial
        self._waiter: asyncio.Future[None] | None = None  # the handler's, while it waits
        self._timer: asyncio.TimerHandle | None = None  # wakes the handler at its `wait_until` time

    def push(self, line: bytes) -> None:
        if self.closed:
            return
        self.buffer.append(line)
        if len(self.buffer) == 1:
            _wake(self._waiter)
        elif len(self.buffer) - self._initial > self.limit:
            self.close()  # a consumer this far behind is dropped (as the apiserver does); it resumes

    def push_initial(self, line: bytes) -> None:
        """Queue an initial event: never counts toward the slow-watcher limit."""
        if self.closed:
            return
        self.buffer.append(line)
        self._initial += 1
        if len(self.buffer) == 1:
            _wake(self._waiter)

    def close(self, error_line: bytes | None = None) -> None:
        self.error = error_line
        self.closed = True
        _wake(self._waiter)

    async def wait_until(self, when: float) -> None:
        """Return when there is something to write, the stream closed, or the loop's clock reached `when`."""
        if self.buffer or self.closed:
            return
        # A bare future, and one timer kept from batch to batch while `when` stays the same: this runs once
        # per event batch per watcher, where a timer per wait (or wait_for() around an Event, a task and a
        # timeout scope) would cost more than the batch itself.
        loop = asyncio.get_running_loop()
        timer = self._timer
        if timer is None or timer.when() != when:
            if timer is not None:
                timer.cancel()
            if when <= loop.time():
                return
            self._timer = loop.call_at(when, self._ring)
        waiter = self._waiter = loop.create_future()
        try:
            await waiter
        finally:
            self._waiter = None

    def _ring(self) -> None:
        self._timer = None
        _wake(self._waiter)

    def stop_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def drain(self) -> bytes:
        data = b"".join(self.buffer)
        self.buffer.clear()
        self._initial = 0
        return data


def _wake(waiter: asyncio.Future[None] | None) -> None:
    if waiter is not None and not waiter.done():
        waiter.set_result(None)


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

    @property
    def buffered_lines(self) -> int:
        """Events queued in the open watches and not yet handed to their HTTP responses."""
        return sum(len(stream.buffer) for stream in self._streams)
