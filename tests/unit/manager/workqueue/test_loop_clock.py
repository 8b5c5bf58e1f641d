"""LoopClock on the loops the daemon runs: asyncio's and uvloop (whose own clock has whole milliseconds)."""

from __future__ import annotations

import asyncio
import time
from typing import cast

import uvloop

from manager.workqueue.clock import LoopClock


def test_on_asyncios_loop_now_is_time_monotonic() -> None:
    async def check() -> None:
        clock = LoopClock()
        clock.now()
        assert clock.now is time.monotonic

    asyncio.run(check())


def test_on_uvloop_now_keeps_sub_millisecond_durations() -> None:
    async def check() -> None:
        loop = asyncio.get_running_loop()
        clock = LoopClock()
        first = clock.now()
        assert clock.now is time.monotonic  # not loop.time(), which counts whole milliseconds
        assert abs(first - loop.time()) < 0.002  # the same clock as the loop's timers

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(check())


def test_on_uvloop_a_timer_never_fires_before_the_time_it_was_armed_for() -> None:
    """uvloop rounds a timer's delay to the millisecond (a time 0.4 ms past one is armed 0.4 ms early):
    the delaying queue would find nothing due and re-arm until it is, so LoopClock arms a millisecond late."""

    async def check() -> list[float]:
        loop = asyncio.get_running_loop()
        clock = LoopClock()
        base = round(loop.time(), 3)
        early = []
        for fraction in (0.0001, 0.0004, 0.0006, 0.0009):
            when = base + 0.5 + fraction
            handle = clock.call_at(when, lambda: None)
            early.append(when - cast(asyncio.TimerHandle, handle).when())  # uvloop's has when() too
            handle.cancel()
        return early

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        early = runner.run(check())
    assert max(early) <= 0, early
