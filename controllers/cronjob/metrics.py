"""The CronJob controller's metric, with kube-controller-manager's name and buckets."""

from __future__ import annotations

from prometheus_client import Histogram

JOB_CREATION_SKEW = Histogram(
    "cronjob_controller_job_creation_skew_duration_seconds",
    "Time between when a cronjob is scheduled to be run, and when the corresponding job is created",
    buckets=tuple(float(2**k) for k in range(10)),  # 1 s up to 512 s
)
