"""`add_after`: items that become ready at a point in time.

Waiting items live in a heap ordered by ready time, plus a dict holding each item's current ready
time. Re-adding a waiting item only ever moves it earlier (client-go's rule); the stale heap entry is
skipped when it surfaces. One timer is armed for the earliest entry, so a thousand waiting items cost
one timer, not a thousand.
"""

from __future__ import annotations

import heapq
import itertools

from manager.workqueue.clock import Clock, TimerHandle
from manager.workqueue.queue import Queue, T


class DelayingQueue(Queue[T]):
    def __init__(self, name: str | None = None, *, clock: Clock | None = None) -> None:
        super().__init__(name, clock=clock)
        self._waiting: dict[T, float] = {}
        self._heap: list[tuple[float, int, T]] = []
        self._seq = itertools.count()
        self._timer: TimerHandle | None = None
        self._timer_at = float("inf")

    def add_after(self, item: T, delay: float) -> None:
        """Add `item` after `delay` seconds; an item already waiting keeps the earlier ready time."""
        if self._shutting_down:
            return
        if self._metrics is not None:
            self._metrics.retried()
        if delay <= 0:
            self.add(item)
            return
        ready_at = self.clock.now() + delay
        current = self._waiting.get(item)
        if current is not None and current <= ready_at:
            return
        self._waiting[item] = ready_at
        heapq.heappush(self._heap, (ready_at, next(self._seq), item))
        if ready_at < self._timer_at:
            self._arm(ready_at)

    @property
    def waiting(self) -> int:
        """How many items wait for their ready time (not yet in the queue)."""
        return len(self._waiting)

    def shut_down(self) -> None:
        self._disarm()
        super().shut_down()

    async def shut_down_with_drain(self) -> None:
        self._disarm()
        await super().shut_down_with_drain()

    def _arm(self, when: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = when
        self._timer = self.clock.call_at(when, self._on_timer)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = None
        self._timer_at = float("inf")
        self._waiting.clear()
        self._heap.clear()

    def _on_timer(self) -> None:
        self._timer = None
        self._timer_at = float("inf")
        now = self.clock.now()
        heap = self._heap
        while heap and heap[0][0] <= now:
            ready_at, _, item = heapq.heappop(heap)
            if self._waiting.get(item) == ready_at:
                del self._waiting[item]
                self.add(item)
        while heap and self._waiting.get(heap[0][2]) != heap[0][0]:
            heapq.heappop(heap)  # drop stale entries so the timer targets a live one
        if heap:
            self._arm(heap[0][0])
