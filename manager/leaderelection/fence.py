"""The leadership fence: whether this replica may still act on its lease, judged by its own clock alone.

A standby takes the lease over `lease_duration` after it saw our last renewal change the Lease. The server
applied that renewal no earlier than the moment we *sent* it, so the lease is ours, at the very least,
until `sent + lease_duration` — counted from the send, never from the answer, which may arrive late (a
slow server, or a process paused while the answer waited in the socket). The fence closes `margin` before
that, to absorb a difference in clock rate between the replicas and the transit of a write checked just
before the fence closed. Once closed it stays closed: the elector reports the lease lost and the manager
exits, as kube-controller-manager does.

The clock is CLOCK_BOOTTIME where the platform has it: unlike CLOCK_MONOTONIC it also counts time spent in
a system suspend, during which a standby on another machine keeps counting.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import structlog

from manager.client.writegate import WriteRefused

log = structlog.get_logger(__name__)

Clock = Callable[[], float]

# Default fence margin, as a fraction of the lease duration: the clock-rate difference between replicas
# (and the transit time of a write) it tolerates. 15 s leases close the fence 1.5 s before they may expire.
DEFAULT_MARGIN_RATIO = 0.1


def lease_clock() -> float:
    """Seconds on a clock that never jumps back and keeps counting through a pause or a suspend."""
    boottime = getattr(time, "CLOCK_BOOTTIME", None)
    if boottime is None:
        return time.monotonic()
    return time.clock_gettime(boottime)


class NotLeader(WriteRefused):
    """A write refused because this replica does not hold its leader lease, or may no longer hold it."""


class LeaseFence:
    """Open from a successful acquisition until `lease_duration - margin` after the latest successful
    renewal was sent; then closed for good."""

    def __init__(self, lease_duration: float, margin: float, clock: Clock) -> None:
        if not 0 <= margin < lease_duration:
            raise ValueError(f"fence margin must be in [0, lease duration), got {margin} / {lease_duration}")
        self.valid_for = lease_duration - margin
        self._clock = clock
        self._closes_at: float | None = None  # None: the lease was never held in this term
        self._closed_for: str | None = None  # why it closed for good

    @property
    def held(self) -> bool:
        """The lease was acquired in this term (the fence has been open at least once)."""
        return self._closes_at is not None

    @property
    def closes_at(self) -> float:
        """When the fence closes by the clock (-inf before the lease was held, or once closed)."""
        if self._closes_at is None or self._closed_for is not None:
            return float("-inf")
        return self._closes_at

    @property
    def closed_for(self) -> str | None:
        return self._closed_for

    def renewed(self, sent_at: float) -> None:
        """A write of our own holder record, sent at `sent_at` (our clock), succeeded."""
        if self._closed_for is not None:
            return
        if self._closes_at is not None and sent_at >= self._closes_at:
            # Sent after the lease may already have expired: a standby may have acted in between.
            self.close("a renewal was sent after the lease may have expired")
            return
        closes_at = sent_at + self.valid_for
        if self._closes_at is None or closes_at > self._closes_at:
            self._closes_at = closes_at

    def is_open(self) -> bool:
        if self._closed_for is not None or self._closes_at is None:
            return False
        if self._clock() < self._closes_at:
            return True
        self.close("the lease may have expired by this replica's clock")
        return False

    def close(self, reason: str) -> None:
        """Stop acting on the lease for good (no-op before it was held, or when already closed)."""
        if self._closes_at is None or self._closed_for is not None:
            return
        self._closed_for = reason
        log.info("leadership fence closed: no more writes", reason=reason)

    @property
    def deposed(self) -> bool:
        """The lease was held and this replica may no longer act on it."""
        return self.held and not self.is_open()

    def check(self) -> None:
        """The gate of a leader-only component's writes: raises NotLeader unless the fence is open."""
        if not self.is_open():
            raise NotLeader(
                f"not writing: {self._closed_for or 'this replica does not hold the leader lease'}"
            )

    def check_not_deposed(self) -> None:
        """The gate of a component shared with standby work (the event sender): refuses only once the
        lease was held and may have expired."""
        if self.deposed:
            raise NotLeader(f"not writing: {self._closed_for}")
