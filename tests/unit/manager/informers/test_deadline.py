"""The watch read deadline: the limit, the silence watchdog (fake clock and sleep) and the guarded block."""

from __future__ import annotations

import asyncio

import pytest

from manager.informers.deadline import ReadDeadline, SilentWatchError, read_deadline, wait_for_silence


class FakeTime:
    """A clock that moves only when `sleep` is awaited; `heard` lists the times a read arrives."""

    def __init__(self, heard: list[float] | None = None) -> None:
        self.now = 0.0
        self.reads = sorted(heard or [])
        self.last_heard = 0.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, delay: float) -> None:
        self.sleeps.append(delay)
        self.now += delay
        while self.reads and self.reads[0] <= self.now:
            self.last_heard = self.reads.pop(0)
        await asyncio.sleep(0)


def test_the_limit_is_the_idle_timeout_or_the_server_timeout_plus_the_margin() -> None:
    deadline = ReadDeadline(idle_timeout=75.0, margin=15.0)
    assert deadline.limit(300) == 75.0  # bookmarks are due long before the server's timeout
    assert deadline.limit(30) == 45.0  # the server ends the stream first: then it must be over
    assert ReadDeadline().limit(600) == 75.0


@pytest.mark.parametrize("idle, margin", [(0.0, 1.0), (-1.0, 1.0), (10.0, -1.0), (float("nan"), 1.0)])
def test_a_nonsensical_deadline_is_refused(idle: float, margin: float) -> None:
    with pytest.raises(ValueError, match=r"idle timeout|margin"):
        ReadDeadline(idle_timeout=idle, margin=margin)


async def test_silence_is_measured_from_the_last_read() -> None:
    time = FakeTime(heard=[6.0, 14.0])
    silent = await wait_for_silence(10.0, lambda: time.last_heard, clock=time.clock, sleep=time.sleep)
    # 0: silent 0 → wait 10; at 10 heard at 6: silent 4 → wait 6; at 16 heard at 14: wait 8; at 24: done
    assert time.sleeps == [10.0, 6.0, 8.0]
    assert silent == 10.0 and time.now == 24.0


async def test_a_block_that_hears_nothing_fails_with_a_silent_watch_error() -> None:
    time = FakeTime()
    forever = asyncio.Event()
    with pytest.raises(SilentWatchError, match=r"nothing received on the watch for 5\.0s"):
        async with read_deadline(5.0, lambda: time.last_heard, clock=time.clock, sleep=time.sleep):
            await forever.wait()
    assert time.now == 5.0


async def test_a_block_that_keeps_hearing_is_left_alone() -> None:
    time = FakeTime(heard=[float(t) for t in range(1, 50)])
    done = asyncio.Event()

    async def sleep(delay: float) -> None:
        await time.sleep(delay)
        if time.now >= 40:
            done.set()

    async with read_deadline(5.0, lambda: time.last_heard, clock=time.clock, sleep=sleep):
        await done.wait()
    assert time.now >= 40  # the watchdog slept on, the block was never cancelled


async def test_the_block_s_own_timeout_is_not_taken_for_silence() -> None:
    time = FakeTime()
    with pytest.raises(TimeoutError) as raised:
        async with read_deadline(5.0, lambda: time.last_heard, clock=time.clock, sleep=time.sleep):
            raise TimeoutError("socket read timed out")
    assert not isinstance(raised.value, SilentWatchError)


async def test_the_watchdog_is_gone_after_the_block() -> None:
    time = FakeTime()
    before = len(asyncio.all_tasks())
    async with read_deadline(5.0, lambda: time.last_heard, clock=time.clock, sleep=time.sleep):
        await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert len(asyncio.all_tasks()) == before
