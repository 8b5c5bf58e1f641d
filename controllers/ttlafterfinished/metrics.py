"""The TTL-after-finished controller's metric, with kube-controller-manager's name and buckets."""

from __future__ import annotations

from prometheus_client import Histogram

JOB_DELETION_DURATION = Histogram(
    "ttl_after_finished_controller_job_deletion_duration_seconds",
    "The time it took to delete the job since it became eligible for deletion",
    buckets=tuple(0.1 * 2**k for k in range(14)),  # 100 ms up to ~27 min
)
