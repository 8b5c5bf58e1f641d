"""`add_rate_limited`, `forget`, `num_requeues`: client-go's RateLimitingInterface."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from manager.workqueue.clock import Clock
from manager.workqueue.delaying import DelayingQueue
from manager.workqueue.limiters import RateLimiter, default_controller_rate_limiter
from manager.workqueue.queue import T


class RateLimitingQueue(DelayingQueue[T]):
    def __init__(
        self,
        name: str | None = None,
        *,
        rate_limiter: RateLimiter[Any] | None = None,
        clock: Clock | None = None,
    ) -> None:
        super().__init__(name, clock=clock)
        self.rate_limiter: RateLimiter[Hashable] = (
            rate_limiter if rate_limiter is not None else default_controller_rate_limiter()
        )

    def add_rate_limited(self, item: T) -> None:
        """Add `item` after the delay its rate limiter decides (counts a failure for it)."""
        self.add_after(item, self.rate_limiter.when(item))

    def forget(self, item: T) -> None:
        """Reset the failure count of `item`; it still has to be `done()`."""
        self.rate_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return self.rate_limiter.num_requeues(item)
