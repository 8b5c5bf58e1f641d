"""Rate limiters: how long a failed item waits before its retry (client-go's default_rate_limiters)."""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from typing import Generic, Protocol, TypeVar

T = TypeVar("T", bound=Hashable)
T_contra = TypeVar("T_contra", bound=Hashable, contravariant=True)


class RateLimiter(Protocol[T_contra]):
    def when(self, item: T_contra) -> float:
        """Seconds to wait before `item` may be processed again; counts one more failure."""
        ...

    def forget(self, item: T_contra) -> None:
        """Stop tracking `item` (it succeeded)."""
        ...

    def num_requeues(self, item: T_contra) -> int: ...


class ItemExponentialFailureRateLimiter(Generic[T]):
    """base · 2^failures per item, capped at `max_delay`."""

    def __init__(self, base: float, max_delay: float) -> None:
        self.base = base
        self.max_delay = max_delay
        self._failures: dict[T, int] = {}

    def when(self, item: T) -> float:
        exp = self._failures.get(item, 0)
        self._failures[item] = exp + 1
        if exp > 1023:  # 2**1024 overflows a float
            return self.max_delay
        return min(self.base * 2.0**exp, self.max_delay)

    def forget(self, item: T) -> None:
        self._failures.pop(item, None)

    def num_requeues(self, item: T) -> int:
        return self._failures.get(item, 0)


class ItemFastSlowRateLimiter(Generic[T]):
    """`fast` delay for the first `max_fast_attempts` failures of an item, `slow` afterwards."""

    def __init__(self, fast: float, slow: float, max_fast_attempts: int) -> None:
        self.fast = fast
        self.slow = slow
        self.max_fast_attempts = max_fast_attempts
        self._failures: dict[T, int] = {}

    def when(self, item: T) -> float:
        count = self._failures.get(item, 0) + 1
        self._failures[item] = count
        return self.fast if count <= self.max_fast_attempts else self.slow

    def forget(self, item: T) -> None:
        self._failures.pop(item, None)

    def num_requeues(self, item: T) -> int:
        return self._failures.get(item, 0)


class BucketRateLimiter(Generic[T]):
    """An overall token bucket (`qps` refill, `burst` size) shared by all items.

    A reservation always succeeds; the delay is how long until its token exists, as
    golang.org/x/time/rate's Reserve().Delay().
    """

    def __init__(self, qps: float, burst: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.qps = qps
        self.burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock()

    def when(self, item: T) -> float:
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now
        self._tokens -= 1.0
        if self._tokens >= 0:
            return 0.0
        return -self._tokens / self.qps

    def forget(self, item: T) -> None:
        pass

    def num_requeues(self, item: T) -> int:
        return 0


class MaxOfRateLimiter(Generic[T]):
    """The longest delay of several limiters (each is asked, so each counts the failure)."""

    def __init__(self, *limiters: RateLimiter[T]) -> None:
        self.limiters = limiters
        # forget() runs after every successful reconcile: only the limiters that track items are told
        # (a bucket's forget does nothing), through methods bound once.
        self._forgets = tuple(
            limiter.forget for limiter in limiters if type(limiter).forget is not BucketRateLimiter.forget
        )

    def when(self, item: T) -> float:
        return max(limiter.when(item) for limiter in self.limiters)

    def forget(self, item: T) -> None:
        for forget in self._forgets:
            forget(item)

    def num_requeues(self, item: T) -> int:
        return max(limiter.num_requeues(item) for limiter in self.limiters)


def default_controller_rate_limiter(
    *, clock: Callable[[], float] = time.monotonic
) -> MaxOfRateLimiter[Hashable]:
    """client-go's DefaultControllerRateLimiter: max(per item 5 ms·2^n ≤ 1000 s, overall 10 qps burst 100)."""
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(0.005, 1000.0),
        BucketRateLimiter(10.0, 100, clock=clock),
    )


def default_item_based_rate_limiter() -> ItemExponentialFailureRateLimiter[Hashable]:
    """client-go's DefaultItemBasedRateLimiter: per item 1 ms · 2^n up to 1000 s."""
    return ItemExponentialFailureRateLimiter(0.001, 1000.0)
