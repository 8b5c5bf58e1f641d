"""Work queues with client-go's guarantees: dedup, one worker per key, delays, per-item rate limiting."""

from manager.workqueue.clock import Clock, FakeClock, LoopClock
from manager.workqueue.delaying import DelayingQueue
from manager.workqueue.limiters import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    default_controller_rate_limiter,
    default_item_based_rate_limiter,
)
from manager.workqueue.queue import Queue, QueueShutDown
from manager.workqueue.ratelimiting import RateLimitingQueue

__all__ = [
    "BucketRateLimiter",
    "Clock",
    "DelayingQueue",
    "FakeClock",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "LoopClock",
    "MaxOfRateLimiter",
    "Queue",
    "QueueShutDown",
    "RateLimiter",
    "RateLimitingQueue",
    "default_controller_rate_limiter",
    "default_item_based_rate_limiter",
]
