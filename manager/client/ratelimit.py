"""Client-side token bucket (client-go's `flowcontrol` token-bucket limiter: qps refill, burst capacity).

Waiters reserve a token and sleep until it is due, so concurrent callers are served in order and the
long-run rate never exceeds `qps`. The clock and sleep are injectable for tests.

One departure from client-go, for CPU: a throttled caller does not wake the moment its token is due but at
the next tick of a grid of `tick` seconds (by default `burst / qps`, at most `MAX_TICK`), so the callers
throttled during one tick leave together and their requests, responses and the watch events they cause are
handled in one event-loop wake-up instead of one each. Measured with benchmarks/operator_vs_kopf.py under the
default 20 QPS, that wake-up per request was most of the manager's CPU. A request never leaves earlier than
client-go's limiter would let it, and at most one tick later; at most `qps * tick <= burst` leave at once.
The callers of one tick wait on one loop timer (each on a future of its own, so cancelling one leaves the
others waiting): one timer to arm, fire and cancel per tick rather than one per caller.
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
# The callers leaving at one tick: the loop whose timer releases them, and a future each.
TickWaiters = tuple[asyncio.AbstractEventLoop, list[asyncio.Future[None]]]


class TokenBucket:
    """`qps` tokens per second, at most `burst` stored. `qps <= 0` disables limiting (acquire never waits).
    `tick`: the wake-up grid of throttled callers (None: `burst / qps`, at most `MAX_TICK`; 0: none).
    `sleep`: None waits on the running loop's timers (the callers of one tick on one timer); a function
    (tests) is awaited by each throttled caller for its own delay."""

    def __init__(
        self,
        qps: float,
        burst: int,
        *,
        clock: Clock = time.monotonic,
        sleep: Sleep | None = None,
        tick: float | None = None,
    ) -> None:
        self.qps = qps
        self.burst = max(1, burst)
        # An attribute, not a property: the client reads it before every request.
        self.enabled = qps > 0
        if tick is None:
            tick = min(MAX_TICK, self.burst / qps) if qps > 0 else 0.0
        self.tick = tick
        self._clock = clock
        self._sleep = sleep
        self._capacity = float(self.burst)
        self._tokens = self._capacity
        self._last = clock()
        # Tick index (its time over `tick`) -> the callers leaving then; one loop timer per entry.
        self._ticks: dict[int, TickWaiters] = {}

    def reserve(self) -> float:
        """Take one token now; return how long the caller must wait before using it (0: one was stored)."""
        if not self.enabled:
            return 0.0
        now = self._clock()
        tokens = self._tokens + (now - self._last) * self.qps
        if tokens > self._capacity:
            tokens = self._capacity
        self._last = now
        self._tokens = tokens = tokens - 1.0
        return 0.0 if tokens >= 0.0 else -tokens / self.qps

    def try_acquire(self) -> bool:
        """Take a stored token now, without waiting and without a coroutine; False, taking nothing, when
        none is stored (then `acquire()` waits for one). The same bucket arithmetic as `acquire()`."""
        if not self.enabled:
            return True
        now = self._clock()
        tokens = self._tokens + (now - self._last) * self.qps
        if tokens > self._capacity:
            tokens = self._capacity
        if tokens < 1.0:
            return False
        self._last = now
        self._tokens = tokens - 1.0
        return True

    async def acquire(self) -> float:
        """Wait for a token (until the first tick at or after it is due); return the seconds waited."""
        # Reached only when `try_acquire()` found no token stored: no longer worth inlining `reserve()`.
        due = self.reserve()
        if due == 0.0:
            return 0.0
        now = self._last  # the clock reading `reserve()` took
        tick = self.tick
        if tick <= 0.0:
            await (self._sleep or asyncio.sleep)(due)
            return due
        index = math.ceil((now + due) / tick)
        delay = index * tick - now
        if self._sleep is not None:
            await self._sleep(delay)
        else:
            await self._wait_for_tick(index, delay)
        return delay

    def _until_tick(self, delay: float) -> float:
        """The wait from now to the first tick at or after `delay` seconds from now."""
        if self.tick <= 0:
            return delay
        now = self._clock()
        return math.ceil((now + delay) / self.tick) * self.tick - now

    async def _wait_for_tick(self, index: int, delay: float) -> None:
        """Wait with the other callers leaving at tick `index` (`delay` seconds from now): the first one of
        the tick arms the timer that releases them all."""
        loop = asyncio.get_running_loop()
        entry = self._ticks.get(index)
        if entry is None or entry[0] is not loop:
            if len(self._ticks) > 8:  # ticks whose loop closed before they fired (a bucket outliving a loop)
                for stale in [i for i, (other, _) in self._ticks.items() if other.is_closed()]:
                    del self._ticks[stale]
            # The timer fires at the tick's instant (`delay` from now), when every token of the tick is due.
            entry = self._ticks[index] = (loop, [])
            loop.call_later(delay, self._release, index, entry)
        waiter: asyncio.Future[None] = loop.create_future()
        entry[1].append(waiter)
        await waiter

    def _release(self, index: int, entry: TickWaiters) -> None:
        if self._ticks.get(index) is entry:
            del self._ticks[index]
        for waiter in entry[1]:
            if not waiter.done():  # a cancelled caller's future is done already
                waiter.set_result(None)
