"""The reflector's retry delay: client-go's 800 ms doubling to 30 s, jitter 1.0, reset after 2 quiet minutes.

"Quiet" means no backoff was needed for `reset_after` seconds: the API server is assumed healthy again and the
next failure starts from the initial delay. Clock and random source are injectable for tests.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field, replace

INITIAL = 0.8
MAXIMUM = 30.0
FACTOR = 2.0
JITTER = 1.0
RESET_AFTER = 120.0


@dataclass(eq=False)
class Backoff:
    """`next_delay()` returns the next wait: base delay plus up to `jitter` x base of random extra."""

    initial: float = INITIAL
    maximum: float = MAXIMUM
    factor: float = FACTOR
    jitter: float = JITTER
    reset_after: float = RESET_AFTER
    _: KW_ONLY
    clock: Callable[[], float] = time.monotonic
    rng: Callable[[], float] = random.random
    _next_base: float = field(init=False, repr=False)
    _last: float | None = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        self._next_base = self.initial

    def next_delay(self) -> float:
        now = self.clock()
        if self._last is not None and now - self._last >= self.reset_after:
            self._next_base = self.initial
        self._last = now
        base = self._next_base
        self._next_base = min(self.maximum, base * self.factor)
        return base + self.rng() * self.jitter * base if self.jitter > 0 else base

    def copy(self) -> Backoff:
        """A fresh backoff with the same parameters, clock and random source."""
        return replace(self)

    def reset(self) -> None:
        self._next_base = self.initial
        self._last = None
