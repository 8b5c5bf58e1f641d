"""Indexed-Job state derived from status and pods: succeeded and failed indexes, per-index failure counts,
and which failed pod of each index must keep its finalizer until a replacement exists."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set
from typing import Any

from controllers.job import spec as js
from controllers.job.indexed.intervals import Intervals, valid_index
from controllers.job.policy.backoff import finish_time, index_failure_count, index_ignored_failure_count
from controllers.job.policy.failure import FAIL_INDEX, match_pod_failure_policy
from controllers.job.tracking.counting import has_tracking_finalizer, is_active, is_pod_failed, phase, uid

Obj = dict[str, Any]


def succeeded_indexes(job: Mapping[str, Any], pods: Iterable[Obj]) -> tuple[Intervals, Intervals]:
    """(indexes recorded in status.completedIndexes, those plus indexes of newly succeeded pods)."""
    completions = js.completions(job) or 0
    previous = Intervals.parse(js.status(job).get("completedIndexes"), completions)
    new = [
        ix
        for p in pods
        if phase(p) == "Succeeded"
        and has_tracking_finalizer(p)
        and (ix := valid_index(p, completions)) is not None
    ]
    return previous, previous.with_indexes(new)


def is_index_failed(job: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """The pod's failure exhausts its index: a FailIndex rule matched, or it used up backoffLimitPerIndex."""
    if not is_pod_failed(pod, job):
        return False
    counted = True
    policy = js.pod_failure_policy(job)
    if policy is not None:
        match = match_pod_failure_policy(policy, pod)
        if match.action == FAIL_INDEX:
            return True
        counted = match.count_failed
    return counted and index_failure_count(pod) >= js.backoff_limit_per_index(job)


def failed_indexes(job: Mapping[str, Any], pods: Iterable[Obj]) -> Intervals:
    completions = js.completions(job) or 0
    raw = js.status(job).get("failedIndexes")
    previous = Intervals.parse(raw, completions) if raw is not None else Intervals()
    new = [
        ix
        for p in pods
        if (ix := valid_index(p, completions)) is not None
        and has_tracking_finalizer(p)
        and is_index_failed(job, p)
    ]
    return previous.with_indexes(new)


def pods_with_delayed_deletion(
    job: Mapping[str, Any],
    pods: Iterable[Obj],
    *,
    succeeded: Intervals,
    failed: Intervals,
    expected_rm: Set[str],
) -> dict[int, Obj]:
    """Per index with no active pod: the latest failed pod (highest failure count, then latest finish) still
    holding its finalizer. Its finalizer stays until the replacement is created with the incremented count."""
    if not js.has_backoff_limit_per_index(job):
        return {}
    pods = list(pods)
    completions = js.completions(job) or 0
    active_indexes = {ix for p in pods if is_active(p) and (ix := valid_index(p, completions)) is not None}
    result: dict[int, Obj] = {}
    for pod in pods:
        if not has_tracking_finalizer(pod) or uid(pod) in expected_rm or not is_pod_failed(pod, job):
            continue
        ix = valid_index(pod, completions)
        if ix is None or succeeded.has(ix) or failed.has(ix) or ix in active_indexes:
            continue
        current = result.get(ix)
        if current is None or (
            absolute_failure_count(current) <= absolute_failure_count(pod)
            and finish_time(pod) >= finish_time(current)
        ):
            result[ix] = pod
    return result


def absolute_failure_count(pod: Mapping[str, Any]) -> int:
    return index_failure_count(pod) + index_ignored_failure_count(pod)


def replacement_failure_counts(job: Mapping[str, Any], replaced: Mapping[str, Any] | None) -> tuple[int, int]:
    """(failure count, ignored failure count) annotations for the pod replacing `replaced` in its index."""
    if replaced is None:
        return 0, 0
    failures = index_failure_count(replaced)
    ignored = index_ignored_failure_count(replaced)
    policy = js.pod_failure_policy(job)
    if policy is not None and not match_pod_failure_policy(policy, replaced).count_failed:
        return failures, ignored + 1
    return failures + 1, ignored
