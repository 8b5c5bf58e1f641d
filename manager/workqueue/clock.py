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
    two Python calls off every timed queue operation. uvloop reads the same clock (libuv's CLOCK_MONOTONIC)
    in whole milliseconds: `now` is rebound to `time.monotonic()` there too, so the queue's durations
    (workqueue_queue_duration_seconds, work_duration) keep their sub-millisecond part, as client-go's do.
    uvloop rounds a timer's delay to the millisecond, so it could fire up to half a millisecond before the
    time it was armed for by that clock; timers are armed a millisecond late there, so that a due item is
    due when its timer fires (rather than the queue re-arming in a loop until it is).
    """

    __slots__ = ("_late", "_loop", "now")

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._late = 0.0
        self.now: Callable[[], float] = self._first_now

    def _get_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            loop = self._loop = asyncio.get_running_loop()
            if type(loop).time is asyncio.BaseEventLoop.time:
                self.now = time.monotonic
            elif _is_uvloop(loop):
                self.now, self._late = time.monotonic, 0.001
            else:
                self.now = loop.time
        return self._loop

    def _first_now(self) -> float:
        self._get_loop()
        return self.now()

    def call_at(self, when: float, callback: Callable[[], None]) -> TimerHandle:
        return self._get_loop().call_at(when + self._late, callback)


def _is_uvloop(loop: asyncio.AbstractEventLoop) -> bool:
    """A uvloop loop, whose clock is CLOCK_MONOTONIC (as `time.monotonic()`) in whole milliseconds."""
    return type(loop).__module__.partition(".")[0] == "uvloop" and abs(loop.time() - time.monotonic()) < 0.002


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
