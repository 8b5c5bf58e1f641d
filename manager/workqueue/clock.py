"""Clocks for the work queues: the event loop's monotonic clock, and a fake one for tests.

A delaying queue needs two things from time: reading it and being woken at a point in it. Putting
both behind one small protocol lets unit tests step time by hand and see exactly the due timers fire,
with no sleeping.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol


class TimerHandle(Protocol):
    def cancel(self) -> None: ...


class Clock(Protocol):
    """Monotonic seconds plus one-shot timers."""

    def now(self) -> float: ...

    def call_at(self, when: float, callback: Callable[[], None]) -> TimerHandle: ...


class LoopClock:
    """The running event loop's clock (`loop.time()`), resolved lazily so it can be built outside a loop.

    asyncio's own loops read `time.monotonic()`; for them `now` is rebound to it directly, which takes
    two Python calls off every timed queue operation.
    """

    __slots__ = ("_loop", "now")

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self.now: Callable[[], float] = self._first_now

    def _get_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
            loop_time = type(self._loop).time
            self.now = time.monotonic if loop_time is asyncio.BaseEventLoop.time else self._loop.time
        return self._loop

    def _first_now(self) -> float:
        return self._get_loop().time()

    def call_at(self, when: float, callback: Callable[[], None]) -> TimerHandle:
        return self._get_loop().call_at(when, callback)


@dataclass(slots=True, eq=False)
class _FakeTimer:
    cancelled: bool = False

    def cancel(self) -> None:
        self.cancelled = True


class FakeClock:
    """A clock that only moves when `step()` is called; due timers run inside `step()` in time order."""

    def __init__(self, start: float = 1000.0) -> None:
        self._now = start
        self._timers: list[tuple[float, int, _FakeTimer, Callable[[], None]]] = []
        self._seq = itertools.count()

    def now(self) -> float:
        return self._now

    def call_at(self, when: float, callback: Callable[[], None]) -> TimerHandle:
        timer = _FakeTimer()
        heapq.heappush(self._timers, (when, next(self._seq), timer, callback))
        return timer

    def step(self, seconds: float) -> None:
        target = self._now + seconds
        while self._timers and self._timers[0][0] <= target:
            when, _, timer, callback = heapq.heappop(self._timers)
            self._now = max(self._now, when)
            if not timer.cancelled:
                callback()
        self._now = target

    @property
    def pending_timers(self) -> int:
        return sum(1 for entry in self._timers if not entry[2].cancelled)
