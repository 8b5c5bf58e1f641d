"""`add_after`: items that become ready at a point in time.

Waiting items live in a heap ordered by ready time, plus a dict holding each item's current ready
time. Re-adding a waiting item only ever moves it earlier (client-go's rule); the stale heap entry is
skipped when it surfaces. One timer is armed for the earliest entry, so a thousand waiting items cost
one timer, not a thousand.

Coalescing: an item is never handed out before its ready time, but when another item is due shortly
after the earliest one, the timer waits for both: it fires at the earliest ready time plus that item's
slack (5 % of its delay, at most `MAX_SLACK`, unless the caller gives one), and everything ready by then
goes out in one wake-up. A stream of delayed adds (the Job controller batches every pod event by 1 s) then
costs a fraction of the event-loop wake-ups (benchmarks/job_throughput.py, many-streamed). An item alone in
its window is handed out on time; any item at most its slack late.
"""

from __future__ import annotations

import heapq
import itertools

from manager.workqueue.clock import Clock, TimerHandle
from manager.workqueue.queue import Queue, T

SLACK_FRACTION = 0.05
MAX_SLACK = 0.02  # seconds


class DelayingQueue(Queue[T]):
    def __init__(self, name: str | None = None, *, clock: Clock | None = None) -> None:
        super().__init__(name, clock=clock)
        self._waiting: dict[T, float] = {}
        # (ready_at, seq, item, slack); stale when `_waiting` holds another time for the item
        self._heap: list[tuple[float, int, T, float]] = []
        self._seq = itertools.count()
        self._timer: TimerHandle | None = None
        self._timer_at = float("inf")
        self._window_end = float("inf")  # the earliest entry's ready time plus its slack

    def add_after(self, item: T, delay: float, *, slack: float | None = None) -> None:
        """Add `item` after `delay` seconds; an item already waiting keeps the earlier ready time.

        `slack`: how late the item may be handed out so that items due after it go out in the same
        wake-up (only when one is due within it); by default 5 % of `delay`, at most `MAX_SLACK`."""
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
        if slack is None:
            slack = delay * SLACK_FRACTION
            if slack > MAX_SLACK:
                slack = MAX_SLACK
        heapq.heappush(self._heap, (ready_at, next(self._seq), item, slack))
        if ready_at <= self._window_end:  # earlier than the timer, or a reason to hold it
            self._schedule()

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

    def _schedule(self) -> None:
        """Arm the timer for the earliest live entry: at its ready time, or at the end of its slack when
        another live entry is due within it (one of the head's children is the next earliest entry)."""
        heap, waiting = self._heap, self._waiting
        while heap and waiting.get(heap[0][2]) != heap[0][0]:
            heapq.heappop(heap)  # drop stale entries so the timer targets a live one
        if not heap:
            self._window_end = float("inf")
            return
        ready_at, _, _, slack = heap[0]
        self._window_end = ready_at + slack
        when = ready_at
        for child in heap[1:3]:
            if child[0] <= ready_at + slack and waiting.get(child[2]) == child[0]:
                when = ready_at + slack
                break
        if when != self._timer_at:
            self._arm(when)

    def _arm(self, when: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = when
        self._timer = self.clock.call_at(when, self._on_timer)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = None
        self._timer_at = self._window_end = float("inf")
        self._waiting.clear()
        self._heap.clear()

    def _on_timer(self) -> None:
        self._timer = None
        self._timer_at = self._window_end = float("inf")
        now = self.clock.now()
        heap = self._heap
        waiting = self._waiting
        while heap and heap[0][0] <= now:
            ready_at, _, item, _ = heapq.heappop(heap)
            if waiting.get(item) == ready_at:
                del waiting[item]
                self.add(item)
        self._schedule()
