"""Client-side token bucket (client-go's `flowcontrol` token-bucket limiter: qps refill, burst capacity).

Waiters reserve a token and sleep until it is due, so concurrent callers are served in order and the
long-run rate never exceeds `qps`. The clock and sleep are injectable for tests.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]


class TokenBucket:
    """`qps` tokens per second, at most `burst` stored. `qps <= 0` disables limiting (acquire never waits)."""

    def __init__(
        self, qps: float, burst: int, *, clock: Clock = time.monotonic, sleep: Sleep = asyncio.sleep
    ) -> None:
        self.qps = qps
        self.burst = max(1, burst)
        self._clock = clock
        self._sleep = sleep
        self._tokens = float(self.burst)
        self._last = clock()

    @property
    def enabled(self) -> bool:
        return self.qps > 0

    def reserve(self) -> float:
        """Take one token now; return how long the caller must wait before using it (0: one was stored)."""
        if not self.enabled:
            return 0.0
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    async def acquire(self) -> float:
        """Wait for a token; return the seconds waited."""
        delay = self.reserve()
        if delay > 0:
            await self._sleep(delay)
        return delay
