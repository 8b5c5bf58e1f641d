"""The read deadline of a watch: a stream silent for too long is presumed dead.

A watch asks for bookmarks (`allowWatchBookmarks`) and a server-side timeout (`timeoutSeconds`), so a live
stream carries at least one line every bookmark interval (kube-apiserver's watch cache sends one about every
minute; kubesim every 10 s by default) and ends by itself at the timeout. Silence longer than the idle
timeout (the bookmark interval plus a margin), or than the timeout plus a margin, means the connection is
gone without a FIN or RST (a frozen API server, a dropped NAT or load-balancer entry): the reflector drops
the stream and watches again from its last resourceVersion. The opening of the watch counts too: a server
that accepts the connection but never sends the response headers is as dead.

The watchdog runs beside the stream and reads the time of the last read the reflector records anyway, so
the hot path pays nothing per read. Clock and sleep are injectable for tests.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

Sleep = Callable[[float], Awaitable[None]]

IDLE_TIMEOUT = 75.0  # kube-apiserver's watch cache bookmarks about every minute, plus a margin
MARGIN = 15.0  # after the server's own timeoutSeconds


class SilentWatchError(TimeoutError):
    """The watch sent nothing, not even a bookmark, for longer than its read deadline."""


@dataclass(frozen=True)
class ReadDeadline:
    """How long a watch may stay silent: `idle_timeout` (above the server's bookmark interval), or the
    watch's `timeoutSeconds` plus `margin` when that is shorter (the server ends the stream by then)."""

    idle_timeout: float = IDLE_TIMEOUT
    margin: float = MARGIN

    def __post_init__(self) -> None:
        if not self.idle_timeout > 0:
            raise ValueError(f"watch idle timeout must be positive, got {self.idle_timeout}")
        if not self.margin >= 0:
            raise ValueError(f"read deadline margin must not be negative, got {self.margin}")

    def limit(self, timeout_seconds: float) -> float:
        """Seconds of silence after which a watch opened with this `timeoutSeconds` is dead."""
        return min(self.idle_timeout, timeout_seconds + self.margin)


async def wait_for_silence(
    limit: float,
    last_heard: Callable[[], float],
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Sleep = asyncio.sleep,
) -> float:
    """Return once `clock() - last_heard()` reaches `limit` (the silence so far, returned); checks again
    at the earliest moment the deadline could have passed, so it wakes about once per `limit`."""
    while True:
        silent = clock() - last_heard()
        if silent >= limit:
            return silent
        await sleep(limit - silent)


@asynccontextmanager
async def read_deadline(
    limit: float,
    last_heard: Callable[[], float],
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Sleep = asyncio.sleep,
) -> AsyncIterator[None]:
    """Run the block under the deadline: raises SilentWatchError once nothing was heard for `limit` s."""
    loop = asyncio.get_running_loop()
    silence: list[float] = []
    try:
        async with asyncio.timeout(None) as timeout:

            async def expire_when_silent() -> None:
                silence.append(await wait_for_silence(limit, last_heard, clock=clock, sleep=sleep))
                timeout.reschedule(loop.time())  # asyncio.timeout cancels the block, raises TimeoutError

            watchdog = loop.create_task(expire_when_silent(), name="watch-read-deadline")
            try:
                yield
            finally:
                watchdog.cancel()
    except TimeoutError:
        if silence:
            raise SilentWatchError(f"nothing received on the watch for {silence[0]:.1f}s") from None
        raise
