"""Small readers of a Job's spec (raw dicts as served by the API server, already defaulted)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

NON_INDEXED = "NonIndexed"
INDEXED = "Indexed"
TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
DEFAULT_MANAGED_BY = "kubernetes.io/job-controller"

Obj = dict[str, Any]


def spec(job: Mapping[str, Any]) -> Mapping[str, Any]:
    s: Mapping[str, Any] = job.get("spec") or {}
    return s


def status(job: Mapping[str, Any]) -> Mapping[str, Any]:
    s: Mapping[str, Any] = job.get("status") or {}
    return s


def completion_mode(job: Mapping[str, Any]) -> str:
    return str(spec(job).get("completionMode") or NON_INDEXED)


def is_indexed(job: Mapping[str, Any]) -> bool:
    return completion_mode(job) == INDEXED


def completions(job: Mapping[str, Any]) -> int | None:
    value = spec(job).get("completions")
    return None if value is None else int(value)


def parallelism(job: Mapping[str, Any]) -> int:
    value = spec(job).get("parallelism")
    return 1 if value is None else int(value)


def backoff_limit(job: Mapping[str, Any]) -> int:
    value = spec(job).get("backoffLimit")
    if value is None:
        return 2**31 - 1 if has_backoff_limit_per_index(job) else 6
    return int(value)


def has_backoff_limit_per_index(job: Mapping[str, Any]) -> bool:
    return spec(job).get("backoffLimitPerIndex") is not None


def backoff_limit_per_index(job: Mapping[str, Any]) -> int:
    return int(spec(job).get("backoffLimitPerIndex") or 0)


def is_suspended(job: Mapping[str, Any]) -> bool:
    return bool(spec(job).get("suspend"))


def pod_failure_policy(job: Mapping[str, Any]) -> Mapping[str, Any] | None:
    policy: Mapping[str, Any] | None = spec(job).get("podFailurePolicy")
    return policy


def only_replace_failed_pods(job: Mapping[str, Any]) -> bool:
    """podReplacementPolicy Failed (forced by a pod failure policy): terminating pods are not replaced yet."""
    return spec(job).get("podReplacementPolicy") == "Failed" or pod_failure_policy(job) is not None


def restart_policy(job: Mapping[str, Any]) -> str:
    template = spec(job).get("template") or {}
    return str((template.get("spec") or {}).get("restartPolicy") or "")


def managed_by(job: Mapping[str, Any]) -> str | None:
    value = spec(job).get("managedBy")
    return None if value is None else str(value)


def external_manager(job: Mapping[str, Any], ours: str = DEFAULT_MANAGED_BY) -> str | None:
    """The controller that manages `job` when it is not us, else None. An absent managedBy means the built-in
    controller, so a manager configured with another value leaves such Jobs alone."""
    value = managed_by(job) or DEFAULT_MANAGED_BY
    return None if value == ours else value
