"""Rate limiters: client-go default_rate_limiters_test cases."""

from __future__ import annotations

import pytest

from manager.workqueue import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    default_controller_rate_limiter,
    default_item_based_rate_limiter,
)


class Ticks:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_item_exponential_backoff_caps_and_forgets() -> None:
    limiter: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter(0.001, 1.0)
    delays = [limiter.when("one") for _ in range(5)]
    assert delays == pytest.approx([0.001, 0.002, 0.004, 0.008, 0.016])
    assert limiter.num_requeues("one") == 5
    assert limiter.when("two") == pytest.approx(0.001)
    assert limiter.num_requeues("two") == 1
    limiter.forget("one")
    assert limiter.num_requeues("one") == 0
    assert limiter.when("one") == pytest.approx(0.001)
    for _ in range(20):
        last = limiter.when("one")
    assert last == 1.0


def test_item_exponential_overflow_returns_max() -> None:
    limiter: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter(1.0, 1000.0)
    for _ in range(2000):
        delay = limiter.when("x")
    assert delay == 1000.0


def test_fast_slow() -> None:
    limiter: ItemFastSlowRateLimiter[str] = ItemFastSlowRateLimiter(0.005, 10.0, 3)
    assert [limiter.when("a") for _ in range(4)] == [0.005, 0.005, 0.005, 10.0]
    assert limiter.num_requeues("a") == 4
    limiter.forget("a")
    assert limiter.when("a") == 0.005


def test_bucket_burst_then_rate() -> None:
    ticks = Ticks()
    limiter: BucketRateLimiter[str] = BucketRateLimiter(10.0, 3, clock=ticks)
    assert [limiter.when(str(i)) for i in range(3)] == [0.0, 0.0, 0.0]
    assert limiter.when("x") == pytest.approx(0.1)
    assert limiter.when("y") == pytest.approx(0.2)  # reservations queue up behind each other
    ticks.now = 1.0  # refilled (capped at burst)
    assert limiter.when("z") == 0.0
    assert limiter.num_requeues("z") == 0


def test_max_of_asks_every_limiter() -> None:
    ticks = Ticks()
    limiter: MaxOfRateLimiter[str] = MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(0.001, 1.0), BucketRateLimiter(1.0, 2, clock=ticks)
    )
    assert limiter.when("a") == pytest.approx(0.001)
    assert limiter.when("a") == pytest.approx(0.002)
    assert limiter.when("b") == pytest.approx(1.0)  # the bucket is empty now
    assert limiter.num_requeues("a") == 2
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0


def test_default_controller_limiter() -> None:
    ticks = Ticks()
    limiter = default_controller_rate_limiter(clock=ticks)
    # per item: 5 ms · 2^n, capped at 1000 s
    assert [limiter.when("k") for _ in range(3)] == pytest.approx([0.005, 0.01, 0.02])
    # overall: burst 100, then 10 qps
    for i in range(97):
        limiter.when(f"other-{i}")
    assert limiter.when("fresh") == pytest.approx(0.1)
    exp = ItemExponentialFailureRateLimiter[str](0.005, 1000.0)
    for _ in range(30):
        delay = exp.when("x")
    assert delay == 1000.0


def test_default_item_based_limiter() -> None:
    limiter = default_item_based_rate_limiter()
    assert limiter.when("a") == pytest.approx(0.001)
    assert limiter.max_delay == 1000.0
