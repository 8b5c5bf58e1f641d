"""The basic work queue: client-go's fair and stingy queue on one asyncio loop.

Guarantees (the same as client-go's `util/workqueue`):
- Fair: items are handed out in the order they were added.
- Stingy: an item added several times before it is processed is processed once; an item is never
  processed by two workers at once. An item added while it is being processed is parked and re-queued
  exactly once by `done()`.
- Shutdown: after `shut_down()` adds are ignored, workers drain what is queued, then `get()` raises
  `QueueShutDown`. `shut_down_with_drain()` also waits until every item being processed is `done()`.

One loop means no locks: the dirty and processing sets and the FIFO are plain Python containers, and
idle workers wait on futures that `add()` resolves one at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Hashable
from typing import Generic, TypeVar

from manager.workqueue.clock import Clock, LoopClock
from manager.workqueue.metrics import QueueMetrics

T = TypeVar("T", bound=Hashable)


class QueueShutDown(Exception):
    """Raised by `get()` once the queue is shut down and empty."""


class Queue(Generic[T]):
    def __init__(self, name: str | None = None, *, clock: Clock | None = None) -> None:
        self.name = name
        self.clock: Clock = clock if clock is not None else LoopClock()
        self._queue: deque[T] = deque()
        self._dirty: set[T] = set()
        self._processing: set[T] = set()
        self._getters: deque[asyncio.Future[None]] = deque()
        self._shutting_down = False
        self._drain = False
        self._drained: asyncio.Future[None] | None = None
        self._metrics: QueueMetrics | None = QueueMetrics(name, self.clock) if name else None

    def add(self, item: T) -> None:
        """Mark `item` as needing processing; no-op if it already waits or the queue is shutting down."""
        if self._shutting_down or item in self._dirty:
            return
        if self._metrics is not None:
            self._metrics.added(item)
        self._dirty.add(item)
        if item in self._processing:
            return  # parked: done() puts it back
        self._queue.append(item)
        if self._getters:
            self._wake_one()

    async def get(self) -> T:
        """Wait for the next item and mark it as being processed; the caller must call `done(item)`."""
        while not self._queue:
            if self._shutting_down:
                raise QueueShutDown
            waiter = asyncio.get_running_loop().create_future()
            self._getters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():
                    self._wake_one()  # we were woken but will not take the item: pass the wake-up on
                else:
                    with contextlib.suppress(ValueError):
                        self._getters.remove(waiter)
                raise
        item = self._queue.popleft()
        self._processing.add(item)
        self._dirty.discard(item)
        if self._metrics is not None:
            self._metrics.got(item)
        return item

    def get_nowait(self) -> T | None:
        """The next item if one is queued right now, else None (tests and batch workers)."""
        if not self._queue:
            return None
        item = self._queue.popleft()
        self._processing.add(item)
        self._dirty.discard(item)
        if self._metrics is not None:
            self._metrics.got(item)
        return item

    def done(self, item: T) -> None:
        """Mark `item` as processed; if it was added again meanwhile it goes back to the end of the queue."""
        if self._metrics is not None:
            self._metrics.finished(item)
        self._processing.discard(item)
        if item in self._dirty:
            self._queue.append(item)
            if self._getters:
                self._wake_one()
        elif not self._processing and self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    def __len__(self) -> int:
        return len(self._queue)

    def shut_down(self) -> None:
        """Stop accepting adds; workers drain the queue, then `get()` raises. Aborts a pending drain wait."""
        self._drain = False
        self._shut_down()
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    async def shut_down_with_drain(self) -> None:
        """`shut_down()`, then wait until every item in processing is done (or `shut_down()` is called)."""
        self._drain = True
        self._shut_down()
        while self._processing and self._drain:
            self._drained = asyncio.get_running_loop().create_future()
            await self._drained
            self._drained = None

    def shutting_down(self) -> bool:
        return self._shutting_down

    @property
    def processing(self) -> frozenset[T]:
        return frozenset(self._processing)

    def _shut_down(self) -> None:
        self._shutting_down = True
        while self._getters:
            waiter = self._getters.popleft()
            if not waiter.done():
                waiter.set_result(None)

    def _wake_one(self) -> None:
        while self._getters:
            waiter = self._getters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
