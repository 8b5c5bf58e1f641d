"""The Job controller's Prometheus metrics, with kube-controller-manager's names and labels.

Several series move on every sync and pod event, so they are plain counters and bisect-bucketed histograms
turned into metric families at scrape time (as the manager's client and workqueue metrics are; controllers
use only the manager's public API, hence the small histogram here): prometheus_client's labelled children
take a lock per update, ~3 % of the manager's CPU in benchmarks/job_throughput.py many-streamed.
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Iterator
from typing import Any

from prometheus_client.core import REGISTRY, CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector


class _Count:
    """One labelled counter series."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0.0

    def inc(self, amount: float = 1) -> None:
        self.value += amount


class _Histogram:
    """One labelled histogram series: per-bucket counts and a sum; cumulated at scrape time."""

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
        out.append(("+Inf", running + self.counts[-1]))
        return out


class _Family:
    """A labelled counter or histogram: its children by label values, created on first use (so a series
    appears once something was counted in it, as with prometheus_client)."""

    def __init__(
        self, name: str, documentation: str, labels: list[str], buckets: tuple[float, ...] | None = None
    ) -> None:
        self.name = name
        self.documentation = documentation
        self.label_names = labels
        self.buckets = buckets
        self.children: dict[tuple[str, ...], Any] = {}

    def labels(self, *values: str) -> Any:
        child = self.children.get(values)
        if child is None:
            if len(values) != len(self.label_names):
                raise ValueError(f"{self.name}: expected labels {self.label_names}, got {values}")
            child = _Histogram(self.buckets) if self.buckets is not None else _Count()
            self.children[values] = child
        return child

    def family(self) -> Metric:
        if self.buckets is None:
            counter = CounterMetricFamily(self.name, self.documentation, labels=self.label_names)
            for values, count in list(self.children.items()):
                counter.add_metric(list(values), count.value)
            return counter
        histogram = HistogramMetricFamily(self.name, self.documentation, labels=self.label_names)
        for values, hist in list(self.children.items()):
            histogram.add_metric(list(values), hist.cumulative(), hist.sum)
        return histogram


class JobMetrics(Collector):
    def __init__(self) -> None:
        self.families: list[_Family] = []

    def add(self, family: _Family) -> _Family:
        self.families.append(family)
        return family

    def collect(self) -> Iterator[Metric]:
        for family in self.families:
            yield family.family()


_COLLECTOR = JobMetrics()

SYNC_DURATION = _COLLECTOR.add(
    _Family(
        "job_controller_job_sync_duration_seconds",
        "The time it took to sync a job",
        ["completion_mode", "result", "action"],
        buckets=tuple(0.004 * 2**i for i in range(15)),
    )
)
SYNCS = _COLLECTOR.add(
    _Family("job_controller_job_syncs", "The number of job syncs", ["completion_mode", "result", "action"])
)
JOBS_FINISHED = _COLLECTOR.add(
    _Family(
        "job_controller_jobs_finished", "The number of finished jobs", ["completion_mode", "result", "reason"]
    )
)
PODS_FINISHED = _COLLECTOR.add(
    _Family(
        "job_controller_job_pods_finished",
        "The number of finished Pods that are fully tracked",
        ["completion_mode", "result"],
    )
)
POD_FAILURES_HANDLED_BY_POLICY = _COLLECTOR.add(
    _Family(
        "job_controller_pod_failures_handled_by_failure_policy",
        "The number of failed Pods handled by failure policy with respect to the failure policy action "
        "applied based on the matched rule",
        ["action"],
    )
)
TERMINATED_PODS_TRACKING_FINALIZER = _COLLECTOR.add(
    _Family(
        "job_controller_terminated_pods_tracking_finalizer",
        "The number of terminated pods (phase=Failed|Succeeded) that have the finalizer "
        "batch.kubernetes.io/job-tracking; the event label can be add or delete",
        ["event"],
    )
)
FINISHED_INDEXES = _COLLECTOR.add(
    _Family(
        "job_controller_job_finished_indexes", "The number of finished indexes", ["status", "backoffLimit"]
    )
)
PODS_CREATION = _COLLECTOR.add(
    _Family(
        "job_controller_job_pods_creation",
        "The number of Pods created by the Job controller labelled with a reason for the Pod creation",
        ["reason", "status"],
    )
)
JOBS_BY_EXTERNAL_CONTROLLER = _COLLECTOR.add(
    _Family(
        "job_controller_jobs_by_external_controller",
        "The number of Jobs managed by an external controller",
        ["controller_name"],
    )
)
REGISTRY.register(_COLLECTOR)

# label values
ACTION_RECONCILING = "reconciling"
ACTION_TRACKING = "tracking"
ACTION_PODS_CREATED = "pods_created"
ACTION_PODS_DELETED = "pods_deleted"
SUCCEEDED = "succeeded"
FAILED = "failed"
CREATE_NEW = "new"
CREATE_RECREATE_TERMINATING_OR_FAILED = "recreate_terminating_or_failed"
CREATE_RECREATE_FAILED = "recreate_failed"


@functools.cache
def child(metric: _Family, *values: str) -> Any:
    """`metric.labels(*values)`, looked up once per label set (children are never removed)."""
    return metric.labels(*values)
