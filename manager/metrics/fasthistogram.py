"""A histogram cheap enough for per-request and per-item hot paths.

prometheus_client's labelled histograms take a lock and walk the bucket list on every observation; here an
observation is one bisect and two additions, and the cumulative buckets are built at scrape time by the
owning collector (manager/workqueue/metrics.py, manager/client/metrics.py).
"""

from __future__ import annotations

import bisect


class FastHistogram:
    """Per-bucket counts and a sum; `cumulative()` gives Prometheus' (le, count) pairs."""

    __slots__ = ("bounds", "counts", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.sum += value

    def cumulative(self) -> list[tuple[str, float]]:
        out: list[tuple[str, float]] = []
        running = 0
        for bound, count in zip(self.bounds, self.counts, strict=False):
            running += count
            out.append((repr(float(bound)), running))
        running += self.counts[-1]
        out.append(("+Inf", running))
        return out
