"""Backoff waits that end early when the API server is known to answer again.

client-go's reflector backoff (up to 30 s plus jitter) is right while the API server keeps failing, but after
an outage it delays recovery by up to that much. The manager probes the API server (manager/lifecycle/
apiprobe.py); when a probe succeeds after failures it calls `RetrySignal.wake()`, and every reflector waiting
out a backoff retries at once. The backoff itself is untouched: a retry that fails again waits the next,
longer, delay.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

Sleep = Callable[[float], Awaitable[None]]


class RetrySignal:
    """Shared by every reflector of an informer factory; `wake()` ends all the current `sleep()`s."""

    def __init__(self) -> None:
        self._woken = asyncio.Event()
        self.wakes = 0

    def wake(self) -> None:
        """End every current wait; later waits are not affected."""
        self.wakes += 1
        self._woken.set()
        self._woken = asyncio.Event()  # the next generation of waiters

    async def sleep(self, delay: float, sleep: Sleep = asyncio.sleep) -> bool:
        """Wait `delay` seconds (with `sleep`, injectable for tests) or until `wake()`; True when woken."""
        woken = self._woken
        if delay <= 0:
            return False
        sleeper = asyncio.ensure_future(sleep(delay))
        waker = asyncio.ensure_future(woken.wait())
        try:
            done, _ = await asyncio.wait((sleeper, waker), return_when=asyncio.FIRST_COMPLETED)
        finally:
            sleeper.cancel()
            waker.cancel()
        return waker in done and not waker.cancelled()
