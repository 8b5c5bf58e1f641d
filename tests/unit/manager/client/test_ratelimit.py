"""Client-side token bucket timing with an injectable clock and sleep."""

from __future__ import annotations

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
    bucket = TokenBucket(qps=10, burst=3, clock=t.clock, sleep=t.sleep)
    waits = [await bucket.acquire() for _ in range(6)]
    assert waits[:3] == [0.0, 0.0, 0.0]
    assert waits[3:] == pytest.approx([0.1, 0.1, 0.1])
    assert t.now == pytest.approx(0.3)  # 6 requests: 3 from the burst, 3 more at 10/s


async def test_refills_while_idle_up_to_burst() -> None:
    t = FakeTime()
    bucket = TokenBucket(qps=2, burst=2, clock=t.clock, sleep=t.sleep)
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
