"""Client-side token bucket (client-go's `flowcontrol` token-bucket limiter: qps refill, burst capacity).

Waiters reserve a token and sleep until it is due, so concurrent callers are served in order and the
long-run rate never exceeds `qps`. The clock and sleep are injectable for tests.

One departure from client-go, for CPU: a throttled caller does not wake the moment its token is due but at
the next tick of a grid of `tick` seconds (by default `burst / qps`, at most `MAX_TICK`), so the callers
throttled during one tick leave together and their requests, responses and the watch events they cause are
handled in one event-loop wake-up instead of one each. Measured with benchmarks/operator_vs_kopf.py under the
default 20 QPS, that wake-up per request was most of the manager's CPU. A request never leaves earlier than
client-go's limiter would let it, and at most one tick later; at most `qps * tick <= burst` leave at once.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable

# Seconds: the longest a throttled request waits past its token's due time. 1.5 lets the defaults (20 QPS,
# burst 30) tick at burst / qps: each tick's work starts from cold CPU caches, so fewer ticks cost less CPU
# for the same requests (measured: benchmarks/README.md, operator_vs_kopf).
MAX_TICK = 1.5

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]


class TokenBucket:
    """`qps` tokens per second, at most `burst` stored. `qps <= 0` disables limiting (acquire never waits).
    `tick`: the wake-up grid of throttled callers (None: `burst / qps`, at most `MAX_TICK`; 0: none)."""

    def __init__(
        self,
        qps: float,
        burst: int,
        *,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
        tick: float | None = None,
    ) -> None:
        self.qps = qps
        self.burst = max(1, burst)
        if tick is None:
            tick = min(MAX_TICK, self.burst / qps) if qps > 0 else 0.0
        self.tick = tick
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
        """Wait for a token (until the first tick at or after it is due); return the seconds waited."""
        delay = self.reserve()
        if delay > 0:
            delay = self._until_tick(delay)
            await self._sleep(delay)
        return delay

    def _until_tick(self, delay: float) -> float:
        if self.tick <= 0:
            return delay
        now = self._clock()
        return math.ceil((now + delay) / self.tick) * self.tick - now
