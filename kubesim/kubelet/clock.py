"""Clocks for the simulated kubelet: the real one runs timers on the asyncio loop, the manual one in tests.

KubeSim hands the kubelet its `clock` (a callable returning seconds since the epoch, shared with the store).
A plain callable gets loop timers; an object that also has `call_later` (such as `ManualClock`) drives the
timers itself, so a test can pass one `ManualClock` to `KubeSim(clock=...)` and move time by hand.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable


class Timer(Protocol):
    def cancel(self) -> None: ...


@runtime_checkable
class Clock(Protocol):
    """Wall time (epoch seconds) plus one-shot timers; the kubelet never sleeps or polls."""

    def __call__(self) -> float: ...

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer: ...


class LoopClock:
    """Time from `source`; timers are `loop.call_later` handles on the running loop."""

    def __init__(self, source: Callable[[], float] = time.time) -> None:
        self._source = source

    def __call__(self) -> float:
        return self._source()

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        return asyncio.get_running_loop().call_later(max(0.0, delay), callback)


def as_clock(clock: Callable[[], float] | Clock | None) -> Clock:
    if clock is None:
        return LoopClock()
    if isinstance(clock, Clock):
        return clock
    return LoopClock(clock)


@dataclass(order=True, slots=True)
class _ManualTimer:
    """A scheduled callback; timers order by deadline, then by when they were scheduled."""

    when: float
    seq: int
    callback: Callable[[], None] = field(compare=False)
    cancelled: bool = field(default=False, compare=False)

    def cancel(self) -> None:
        self.cancelled = True


class ManualClock:
    """Time moves only when a test calls `advance`; due timers then fire in order of their deadline."""

    def __init__(self, start: float = 1_767_225_600.0) -> None:  # 2026-01-01T00:00:00Z
        self._now = start
        self._heap: list[_ManualTimer] = []
        self._seq = itertools.count()

    def __call__(self) -> float:
        return self._now

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        timer = _ManualTimer(self._now + max(0.0, delay), next(self._seq), callback)
        heapq.heappush(self._heap, timer)
        return timer

    @property
    def pending(self) -> int:
        return sum(1 for timer in self._heap if not timer.cancelled)

    def advance(self, seconds: float) -> None:
        """Move time forward, firing every timer that falls due (including ones scheduled on the way)."""
        target = self._now + seconds
        while self._heap and self._heap[0].when <= target:
            timer = heapq.heappop(self._heap)
            self._now = max(self._now, timer.when)
            if not timer.cancelled:
                timer.callback()
        self._now = target
