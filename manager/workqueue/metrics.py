"""`workqueue_*` metrics with client-go's names, for named queues only.

The hot path of a queue must stay cheap (the target is 200,000 add+get+done cycles a second), and
prometheus_client's labelled children take a lock and walk bucket lists on every call. So each named
queue keeps plain counters and bisect-bucketed histograms, and one collector turns them into metric
families at scrape time. Gauges that depend on "now" (unfinished work, longest running processor) are
computed at scrape time instead of by a 500 ms ticker.
"""

from __future__ import annotations

import weakref
from collections.abc import Hashable, Iterator
from typing import Any

from prometheus_client.core import REGISTRY, CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector

from manager.metrics.fasthistogram import FastHistogram
from manager.workqueue.clock import Clock

# client-go: ExponentialBuckets(10e-9, 10, 12) → 1e-8 … 1e3 seconds.
DURATION_BUCKETS: tuple[float, ...] = tuple(10e-9 * 10**i for i in range(12))


class NameStats:
    """Monotonic series of one queue name, shared by every queue ever created with that name."""

    __slots__ = ("adds", "queue_duration", "retries", "work_duration")

    def __init__(self) -> None:
        self.adds = 0
        self.retries = 0
        self.queue_duration = FastHistogram(DURATION_BUCKETS)
        self.work_duration = FastHistogram(DURATION_BUCKETS)


class QueueMetrics:
    """Per-queue bookkeeping: when each waiting item was added and when each processed item was started."""

    __slots__ = ("__weakref__", "add_times", "clock", "depth", "name", "start_times", "stats")
    # `clock.now` is looked up on every call: a LoopClock rebinds it once it knows its loop.

    def __init__(self, name: str, clock: Clock) -> None:
        self.name = name
        self.clock = clock
        self.stats = _COLLECTOR.stats_for(name)
        self.add_times: dict[Hashable, float] = {}
        self.start_times: dict[Hashable, float] = {}
        self.depth = 0
        _COLLECTOR.track(self)

    def added(self, item: Hashable) -> None:
        """A new (not dirty) item; as in client-go, depth counts it even while it is parked."""
        self.stats.adds += 1
        self.depth += 1
        if item not in self.add_times:
            self.add_times[item] = self.clock.now()

    def got(self, item: Hashable) -> None:
        now = self.clock.now()
        self.depth -= 1
        added = self.add_times.pop(item, None)
        if added is not None:
            self.stats.queue_duration.observe(now - added)
        self.start_times[item] = now

    def finished(self, item: Hashable) -> None:
        started = self.start_times.pop(item, None)
        if started is not None:
            self.stats.work_duration.observe(self.clock.now() - started)

    def retried(self) -> None:
        self.stats.retries += 1

    def running_durations(self) -> list[float]:
        try:
            now = self.clock.now()
        except RuntimeError:  # scraped from a thread without the queue's loop
            return []
        return [now - started for started in self.start_times.values()]


class WorkqueueCollector(Collector):
    def __init__(self) -> None:
        self._stats: dict[str, NameStats] = {}
        self._queues: weakref.WeakSet[QueueMetrics] = weakref.WeakSet()

    def stats_for(self, name: str) -> NameStats:
        stats = self._stats.get(name)
        if stats is None:
            stats = self._stats[name] = NameStats()
        return stats

    def track(self, metrics: QueueMetrics) -> None:
        self._queues.add(metrics)

    def collect(self) -> Iterator[Any]:
        depth = GaugeMetricFamily("workqueue_depth", "Current depth of workqueue", labels=["name"])
        adds = CounterMetricFamily(
            "workqueue_adds", "Total number of adds handled by workqueue", labels=["name"]
        )
        retries = CounterMetricFamily(
            "workqueue_retries", "Total number of retries handled by workqueue", labels=["name"]
        )
        latency = HistogramMetricFamily(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested.",
            labels=["name"],
        )
        work = HistogramMetricFamily(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            labels=["name"],
        )
        unfinished = GaugeMetricFamily(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has done that is in progress and hasn't been observed by "
            "work_duration. Large values indicate stuck threads.",
            labels=["name"],
        )
        longest = GaugeMetricFamily(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            labels=["name"],
        )
        live: dict[str, list[QueueMetrics]] = {}
        for queue in list(self._queues):
            live.setdefault(queue.name, []).append(queue)
        for name, stats in sorted(self._stats.items()):
            queues = live.get(name, [])
            running = [d for q in queues for d in q.running_durations()]
            depth.add_metric([name], sum(q.depth for q in queues))
            adds.add_metric([name], stats.adds)
            retries.add_metric([name], stats.retries)
            latency.add_metric([name], stats.queue_duration.cumulative(), stats.queue_duration.sum)
            work.add_metric([name], stats.work_duration.cumulative(), stats.work_duration.sum)
            unfinished.add_metric([name], sum(running))
            longest.add_metric([name], max(running, default=0.0))
        yield from (depth, adds, latency, work, unfinished, longest, retries)


_COLLECTOR = WorkqueueCollector()
REGISTRY.register(_COLLECTOR)
