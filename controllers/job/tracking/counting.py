"""Counting a Job's pods and the bookkeeping of the tracking-finalizer protocol.

A finished pod is counted exactly once: while it still carries the `batch.kubernetes.io/job-tracking`
finalizer it is "new"; its UID is first recorded in status.uncountedTerminatedPods (and flushed), then the
finalizer is removed, then the UID moves into status.succeeded/failed. A UID in uncounted whose pod no longer
has the finalizer (or is gone) is counted; a pod without the finalizer is never looked at again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass, field
from typing import Any

from controllers.job import spec as js
from controllers.job.indexed.intervals import Intervals, valid_index
from controllers.job.policy.failure import match_pod_failure_policy

Obj = dict[str, Any]
MAX_UNCOUNTED_PODS = 500


def uid(pod: Mapping[str, Any]) -> str:
    return str((pod.get("metadata") or {}).get("uid") or "")


def phase(pod: Mapping[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def deletion_timestamp(obj: Mapping[str, Any]) -> Any:
    return (obj.get("metadata") or {}).get("deletionTimestamp")


def has_tracking_finalizer(pod: Mapping[str, Any]) -> bool:
    return js.TRACKING_FINALIZER in ((pod.get("metadata") or {}).get("finalizers") or ())


def is_terminal(pod: Mapping[str, Any]) -> bool:
    return phase(pod) in ("Succeeded", "Failed")


def is_active(pod: Mapping[str, Any]) -> bool:
    return not is_terminal(pod) and deletion_timestamp(pod) is None


def is_terminating(pod: Mapping[str, Any]) -> bool:
    return deletion_timestamp(pod) is not None and not is_terminal(pod)


def is_ready(pod: Mapping[str, Any]) -> bool:
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "Ready":
            return bool(cond.get("status") == "True")
    return False


def is_pod_failed(pod: Mapping[str, Any], job: Mapping[str, Any]) -> bool:
    """Failed phase; or, unless only failed pods are replaced, being deleted before succeeding."""
    if phase(pod) == "Failed":
        return True
    if js.only_replace_failed_pods(job):
        return False
    return deletion_timestamp(pod) is not None and phase(pod) != "Succeeded"


def uncounted_sets(status: Mapping[str, Any]) -> tuple[set[str], set[str]]:
    uncounted = status.get("uncountedTerminatedPods") or {}
    return set(uncounted.get("succeeded") or ()), set(uncounted.get("failed") or ())


def _is_new(pod: Mapping[str, Any], job: Mapping[str, Any], skip: Set[str], expected_rm: Set[str]) -> bool:
    """Not yet accounted for: has the finalizer, not recorded in `skip`, a valid index if Indexed."""
    if not has_tracking_finalizer(pod) or uid(pod) in skip or uid(pod) in expected_rm:
        return False
    if js.is_indexed(job):
        return valid_index(pod, js.completions(job) or 0) is not None
    return True


def new_finished_pods(
    job: Mapping[str, Any], pods: Iterable[Obj], uncounted: tuple[Set[str], Set[str]], expected_rm: Set[str]
) -> tuple[list[Obj], list[Obj]]:
    """Pods that finished since the last flush: (succeeded, failed)."""
    succeeded: list[Obj] = []
    failed: list[Obj] = []
    for pod in pods:
        if phase(pod) == "Succeeded" and _is_new(pod, job, uncounted[0], expected_rm):
            succeeded.append(pod)
        elif is_pod_failed(pod, job) and _is_new(pod, job, uncounted[1], expected_rm):
            failed.append(pod)
    return succeeded, failed


def non_ignored_failed_count(job: Mapping[str, Any], failed: Iterable[Obj]) -> int:
    policy = js.pod_failure_policy(job)
    if policy is None:
        return sum(1 for _ in failed)
    return sum(1 for p in failed if match_pod_failure_policy(policy, p).count_failed)


def past_backoff_limit_on_failure(job: Mapping[str, Any], pods: Iterable[Obj]) -> bool:
    """restartPolicy OnFailure: container restarts of running/pending pods count against backoffLimit."""
    if js.restart_policy(job) != "OnFailure":
        return False
    restarts = 0
    for pod in pods:
        if phase(pod) in ("Running", "Pending"):
            status = pod.get("status") or {}
            for cs in (
                *(status.get("initContainerStatuses") or ()),
                *(status.get("containerStatuses") or ()),
            ):
                restarts += int(cs.get("restartCount") or 0)
    limit = js.backoff_limit(job)
    return restarts > 0 if limit == 0 else restarts >= limit


def fail_job_message(job: Mapping[str, Any], pods: Iterable[Obj]) -> str | None:
    """The message of the first failed pod matching a FailJob rule of the pod failure policy."""
    policy = js.pod_failure_policy(job)
    if policy is None:
        return None
    for pod in pods:
        if is_pod_failed(pod, job):
            message = match_pod_failure_policy(policy, pod).fail_job_message
            if message is not None:
                return message
    return None


def clean_uncounted(status: dict[str, Any], uids_with_finalizer: Set[str]) -> bool:
    """Move the uncounted UIDs whose pods lost their finalizer (or vanished) into the counters."""
    uncounted = status.setdefault("uncountedTerminatedPods", {})
    changed = False
    for list_key, counter in (("succeeded", "succeeded"), ("failed", "failed")):
        current = uncounted.get(list_key) or []
        kept = [u for u in current if u in uids_with_finalizer]
        if len(kept) != len(current):
            changed = True
            status[counter] = int(status.get(counter) or 0) + len(current) - len(kept)
            uncounted[list_key] = kept
    return changed


@dataclass(slots=True)
class TrackingPlan:
    """One sync's share of the protocol: UIDs recorded in status, finalizers to remove, indexes done.
    `policy_actions`: pods per pod failure policy action (a plain dict: a Counter costs a Python-level
    `__init__` per sync for a count that is almost always empty)."""

    remove_finalizer: list[Obj] = field(default_factory=list)
    new_succeeded_indexes: list[int] = field(default_factory=list)
    policy_actions: dict[str, int] = field(default_factory=dict)
    reached_max_uncounted: bool = False
    changed: bool = False


def plan_tracking(
    job: Mapping[str, Any],
    status: dict[str, Any],
    pods: Iterable[Obj],
    *,
    uncounted: tuple[Set[str], Set[str]],
    expected_rm: Set[str],
    finishing: bool,
    prev_succeeded: Intervals,
    delayed_per_index: Mapping[int, Obj],
) -> TrackingPlan:
    """Record newly finished pods into `status` (uncounted UIDs; for Indexed, completed indexes are returned).

    `finishing`: the Job has a terminal (or interim terminal) condition this sync, so every pod may drop its
    finalizer and every unfinished pod counts as failed.
    """
    plan = TrackingPlan()
    lists = status.setdefault("uncountedTerminatedPods", {})
    succeeded_list: list[str] = lists.setdefault("succeeded", [])
    failed_list: list[str] = lists.setdefault("failed", [])
    indexed = js.is_indexed(job)
    completions = js.completions(job) or 0
    policy = js.pod_failure_policy(job)
    being_deleted = deletion_timestamp(job) is not None
    ordered = sorted(pods, key=lambda p: valid_index(p, 2**31) or 0) if indexed else list(pods)
    for pod in ordered:
        pod_uid = uid(pod)
        if not has_tracking_finalizer(pod) or pod_uid in expected_rm:
            continue  # accounted for in an earlier sync
        failed = is_pod_failed(pod, job)
        if not (being_deleted or finishing or phase(pod) == "Succeeded"):
            if not failed:
                continue
            index = valid_index(pod, completions) if indexed else None
            delayed = delayed_per_index.get(index) if index is not None else None
            if delayed is not None and uid(delayed) == pod_uid:
                continue  # keep it until its replacement carries the index failure count
        plan.remove_finalizer.append(pod)
        if phase(pod) == "Succeeded" and pod_uid not in uncounted[1]:
            if indexed:
                index = valid_index(pod, completions)
                if index is not None and not prev_succeeded.has(index):
                    plan.new_succeeded_indexes.append(index)
                    plan.changed = True
            elif pod_uid not in uncounted[0]:
                succeeded_list.append(pod_uid)
                plan.changed = True
        elif failed or (finishing and not is_terminal(pod)):
            if pod_uid in uncounted[1] or (indexed and valid_index(pod, completions) is None):
                pass
            else:
                count_it = True
                if policy is not None:
                    match = match_pod_failure_policy(policy, pod)
                    if match.action is not None:
                        actions = plan.policy_actions
                        actions[match.action] = actions.get(match.action, 0) + 1
                    count_it = match.count_failed
                if count_it:
                    failed_list.append(pod_uid)
                    plan.changed = True
        if len(plan.new_succeeded_indexes) + len(succeeded_list) + len(failed_list) >= MAX_UNCOUNTED_PODS:
            plan.reached_max_uncounted = True
            break
    return plan
