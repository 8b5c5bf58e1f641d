"""The Job controller's Prometheus metrics, with kube-controller-manager's names and labels.

Several series move on every sync and pod event, so they are the manager's scrape-time families
(`ScrapeTimeCounter`, `ScrapeTimeHistogram`): prometheus_client's labelled children take a lock per update,
~3 % of the manager's CPU in benchmarks/job_throughput.py many-streamed.
"""

from __future__ import annotations

import functools
from typing import Any

from prometheus_client.core import REGISTRY

from manager import ScrapeTimeCollector, ScrapeTimeCounter, ScrapeTimeHistogram

_COLLECTOR = ScrapeTimeCollector()

SYNC_DURATION = _COLLECTOR.add(
    ScrapeTimeHistogram(
        "job_controller_job_sync_duration_seconds",
        "The time it took to sync a job",
        ["completion_mode", "result", "action"],
        buckets=tuple(0.004 * 2**i for i in range(15)),
    )
)
SYNCS = _COLLECTOR.add(
    ScrapeTimeCounter(
        "job_controller_job_syncs", "The number of job syncs", ["completion_mode", "result", "action"]
    )
)
JOBS_FINISHED = _COLLECTOR.add(
    ScrapeTimeCounter(
        "job_controller_jobs_finished", "The number of finished jobs", ["completion_mode", "result", "reason"]
    )
)
PODS_FINISHED = _COLLECTOR.add(
    ScrapeTimeCounter(
        "job_controller_job_pods_finished",
        "The number of finished Pods that are fully tracked",
        ["completion_mode", "result"],
    )
)
POD_FAILURES_HANDLED_BY_POLICY = _COLLECTOR.add(
    ScrapeTimeCounter(
        "job_controller_pod_failures_handled_by_failure_policy",
        "The number of failed Pods handled by failure policy with respect to the failure policy action "
        "applied based on the matched rule",
        ["action"],
    )
)
TERMINATED_PODS_TRACKING_FINALIZER = _COLLECTOR.add(
    ScrapeTimeCounter(
        "job_controller_terminated_pods_tracking_finalizer",
        "The number of terminated pods (phase=Failed|Succeeded) that have the finalizer "
        "batch.kubernetes.io/job-tracking; the event label can be add or delete",
        ["event"],
    )
)
FINISHED_INDEXES = _COLLECTOR.add(
    ScrapeTimeCounter(
        "job_controller_job_finished_indexes", "The number of finished indexes", ["status", "backoffLimit"]
    )
)
PODS_CREATION = _COLLECTOR.add(
    ScrapeTimeCounter(
        "job_controller_job_pods_creation",
        "The number of Pods created by the Job controller labelled with a reason for the Pod creation",
        ["reason", "status"],
    )
)
JOBS_BY_EXTERNAL_CONTROLLER = _COLLECTOR.add(
    ScrapeTimeCounter(
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
def child(metric: ScrapeTimeCounter | ScrapeTimeHistogram, *values: str) -> Any:
    """`metric.labels(*values)`, looked up once per label set (children are never removed)."""
    return metric.labels(*values)
