"""Client-side token bucket timing with an injectable clock and sleep."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from manager.client.ratelimit import TokenBucket


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


async def test_burst_then_qps() -> None:
    t = FakeTime()
    bucket = TokenBucket(qps=10, burst=3, clock=t.clock, sleep=t.sleep, tick=0)
    waits = [await bucket.acquire() for _ in range(6)]
    assert waits[:3] == [0.0, 0.0, 0.0]
    assert waits[3:] == pytest.approx([0.1, 0.1, 0.1])
    assert t.now == pytest.approx(0.3)  # 6 requests: 3 from the burst, 3 more at 10/s


async def test_refills_while_idle_up_to_burst() -> None:
    t = FakeTime()
    bucket = TokenBucket(qps=2, burst=2, clock=t.clock, sleep=t.sleep, tick=0)
    await bucket.acquire()
    await bucket.acquire()
    t.now += 100.0  # a long pause refills only up to the burst
    assert [await bucket.acquire() for _ in range(3)] == pytest.approx([0.0, 0.0, 0.5])


def test_concurrent_reservations_queue_up() -> None:
    t = FakeTime()
    bucket = TokenBucket(qps=5, burst=1, clock=t.clock, sleep=t.sleep)
    delays = [bucket.reserve() for _ in range(4)]  # four callers at the same instant
    assert delays == pytest.approx([0.0, 0.2, 0.4, 0.6])


async def test_non_positive_qps_disables_limiting() -> None:
    t = FakeTime()
    for qps in (0.0, -1.0):
        bucket = TokenBucket(qps=qps, burst=1, clock=t.clock, sleep=t.sleep)
        assert not bucket.enabled
        assert [await bucket.acquire() for _ in range(100)] == [0.0] * 100
    assert t.slept == []


def test_the_tick_defaults_to_burst_over_qps_capped_at_one_and_a_half_seconds() -> None:
    assert TokenBucket(qps=20, burst=30).tick == pytest.approx(1.5)
    assert TokenBucket(qps=5, burst=30).tick == 1.5
    assert TokenBucket(qps=10, burst=3).tick == pytest.approx(0.3)
    assert TokenBucket(qps=0, burst=30).tick == 0.0


async def test_throttled_callers_wake_together_on_the_next_tick() -> None:
    t = FakeTime()
    t.now = 100.05
    bucket = TokenBucket(qps=10, burst=3, clock=t.clock, sleep=t.sleep)  # tick 0.3 s
    due = [bucket.reserve() for _ in range(3)] + [bucket.reserve() for _ in range(4)]
    assert due[3:] == pytest.approx([0.1, 0.2, 0.3, 0.4])  # client-go's limiter: one every 0.1 s
    wakes = [t.now + bucket._until_tick(d) for d in due[3:]]
    # Never before the token is due, at most one tick after, and on the grid (0.3 s): the last three together.
    assert wakes == pytest.approx([100.2, 100.5, 100.5, 100.5])  # due 100.15, .25, .35, .45
    assert all(
        w >= t.now + d - 1e-9 and w < t.now + d + bucket.tick for w, d in zip(wakes, due[3:], strict=True)
    )


async def test_the_long_run_rate_stays_qps_with_ticks() -> None:
    t = FakeTime()
    bucket = TokenBucket(qps=20, burst=30, clock=t.clock, sleep=t.sleep)
    sent: list[float] = []
    for _ in range(30 + 200):
        await bucket.acquire()
        sent.append(t.now)
    assert sent[-1] >= 200 / 20  # 200 tokens beyond the burst take 10 s at 20 QPS, ticks or not
    per_instant: dict[float, int] = {}
    for when in sent:
        per_instant[round(when, 6)] = per_instant.get(round(when, 6), 0) + 1
    assert max(per_instant.values()) <= bucket.burst


class CountingTimers:
    """Counts the loop timers armed to release a bucket's callers (the running loop's call_later, wrapped)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, bucket: TokenBucket) -> None:
        self.loop, self.armed = loop, 0
        self.call_later = loop.call_later

        def counting(delay: float, callback: Any, *args: Any, **kwargs: Any) -> asyncio.TimerHandle:
            if callback == bucket._release:
                self.armed += 1
            return self.call_later(delay, callback, *args, **kwargs)

        loop.call_later = counting  # type: ignore[method-assign,assignment]

    def restore(self) -> None:
        self.loop.call_later = self.call_later  # type: ignore[method-assign]


@pytest.mark.slow
async def test_the_callers_of_one_tick_share_one_timer_and_keep_the_token_bucket_promise() -> None:
    """On the real loop (0.05 s ticks): 60 concurrent callers, 10 from the burst; the 50 throttled ones
    leave on 5 or 6 ticks through as many timers (not 50), none before client-go's limiter would let it go
    (the n-th caller past the burst n / qps after the first), at most `burst` at each tick."""
    loop = asyncio.get_running_loop()
    bucket = TokenBucket(qps=200, burst=10)  # tick 10 / 200 = 0.05 s
    assert bucket.tick == pytest.approx(0.05)
    order = iter(range(60))
    left: list[tuple[int, float]] = []  # (order of its reservation, when it left)

    async def caller() -> None:
        n = next(order)
        await bucket.acquire()
        left.append((n, time.monotonic()))

    timers = CountingTimers(loop, bucket)
    try:
        start = time.monotonic()
        await asyncio.wait_for(asyncio.gather(*(caller() for _ in range(60))), 5)
    finally:
        timers.restore()
    assert len(left) == 60
    # Its token is due (n + 1 - burst) / qps after the first reservation, which is after `start`.
    assert all(went >= start + max(0, n + 1 - bucket.burst) / bucket.qps for n, went in left)
    per_tick: dict[int, int] = {}
    for n, went in left:
        if n >= bucket.burst:
            per_tick[round(went / bucket.tick)] = per_tick.get(round(went / bucket.tick), 0) + 1
    assert timers.armed == len(per_tick) <= 6
    assert max(per_tick.values()) <= bucket.burst
    assert sum(per_tick.values()) == 50


@pytest.mark.slow
async def test_a_cancelled_caller_does_not_hold_back_the_others_of_its_tick() -> None:
    bucket = TokenBucket(qps=100, burst=2)  # tick 0.02 s
    await bucket.acquire()
    await bucket.acquire()  # the burst is spent: the next three wait for a tick
    waiters = [asyncio.ensure_future(bucket.acquire()) for _ in range(3)]
    await asyncio.sleep(0)
    waiters[0].cancel()
    done = await asyncio.wait_for(asyncio.gather(*waiters, return_exceptions=True), 2)
    assert isinstance(done[0], asyncio.CancelledError)
    assert all(isinstance(w, float) and w > 0 for w in done[1:])
    assert bucket._ticks == {}  # every tick that fired is forgotten


@pytest.mark.slow
def test_a_bucket_outliving_its_event_loop_serves_the_next_one() -> None:
    """A caller left waiting when its loop stopped does not hold back the next loop's caller of the same tick:
    that one gets a timer of its own loop (the clock stands still, so both tokens fall in one 0.05 s tick)."""
    bucket = TokenBucket(qps=100, burst=1, clock=lambda: 100.0, tick=0.05)

    async def leave_one_waiting() -> asyncio.Future[float]:
        await bucket.acquire()
        waiting = asyncio.ensure_future(bucket.acquire())  # due at 100.01: tick 100.05; cancelled by run()
        await asyncio.sleep(0)
        return waiting

    asyncio.run(leave_one_waiting())
    assert list(bucket._ticks) == [2001]

    async def next_loop() -> float:
        return await asyncio.wait_for(bucket.acquire(), 2)  # due at 100.02: the same tick

    assert asyncio.run(next_loop()) == pytest.approx(0.05)


async def test_try_acquire_takes_only_a_stored_token_and_acquire_then_waits_as_before() -> None:
    t = FakeTime()
    bucket = TokenBucket(qps=10, burst=2, clock=t.clock, sleep=t.sleep, tick=0)
    assert bucket.try_acquire() and bucket.try_acquire()
    assert not bucket.try_acquire()  # none stored: nothing taken, so acquire() waits one token's time
    assert await bucket.acquire() == pytest.approx(0.1)
    t.now += 0.05  # half a token: still none to take
    assert not bucket.try_acquire()
    t.now += 0.05
    assert bucket.try_acquire()
    assert TokenBucket(qps=0, burst=1).try_acquire()  # limiting off: always
