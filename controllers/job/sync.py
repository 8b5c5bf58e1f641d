"""One sync of one Job (upstream's syncJob): count pods, decide whether the Job is finished, create or
delete pods, and write status through the tracking-finalizer protocol."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from controllers.common.podutil import parse_time
from controllers.job import conditions as jc
from controllers.job import metrics as m
from controllers.job import spec as js
from controllers.job.indexed.intervals import Intervals
from controllers.job.indexed.state import failed_indexes, pods_with_delayed_deletion, succeeded_indexes
from controllers.job.manage import delete_active_pods, manage_job
from controllers.job.policy.backoff import BackoffRecord
from controllers.job.policy.success import match_success_policy
from controllers.job.tracking.counting import (
    fail_job_message,
    is_active,
    is_ready,
    is_terminating,
    new_finished_pods,
    non_ignored_failed_count,
    past_backoff_limit_on_failure,
    uncounted_sets,
)
from controllers.job.tracking.status import track_status
from manager import format_time

if TYPE_CHECKING:
    from controllers.job.controller import JobController

Obj = dict[str, Any]


_NO_INDEXES = Intervals()  # immutable: a shared default instead of a new instance per sync


@dataclass(slots=True)
class SyncState:
    """What one sync knows about a Job (upstream's syncJobCtx). `job` is a private copy whose status is
    edited in place and replaced by the server's answer after each status write."""

    key: str
    job: Obj
    pods: list[Obj]
    active_pods: list[Obj]
    uncounted: tuple[set[str], set[str]]
    expected_rm: frozenset[str]
    terminating: int
    new_backoff: BackoffRecord
    succeeded: int = 0
    failed: int = 0
    finished: jc.Condition | None = None
    prev_succeeded: Intervals = _NO_INDEXES
    succeeded_indexes: Intervals = _NO_INDEXES
    failed_indexes: Intervals | None = None
    delayed: dict[int, Obj] = field(default_factory=dict)
    action: str = m.ACTION_RECONCILING
    satisfied: bool = True  # creation/deletion expectations met when the sync started

    @property
    def status(self) -> Obj:
        status: Obj = self.job.setdefault("status", {})
        return status


def private_copy(job: Obj) -> Obj:
    """A copy safe to edit: status deep-copied, the rest shared with the cache and never written. (The
    cached status is decoded JSON, which an orjson round trip copies more cheaply than deepcopy.)"""
    status = job.get("status")
    return {**job, "status": orjson.loads(orjson.dumps(status)) if status else {}}


def _condition_if_true(job: Obj, ctype: str) -> jc.Condition | None:
    cond = jc.find_condition(js.status(job).get("conditions"), ctype)
    return dict(cond) if cond is not None and cond.get("status") == "True" else None


async def sync_job(ctl: JobController, key: str) -> None:
    """Sync the Job `key`; raises on errors (the key is retried with the queue's rate limiter)."""
    started = time.perf_counter()
    cached = ctl.jobs.get_by_key(key)
    if cached is None:
        ctl.expectations.delete(key)
        ctl.finalizer_expectations.delete(key)
        ctl.backoff.remove(key)
        return
    if js.external_manager(cached, ctl.managed_by) is not None:
        return
    if jc.is_job_finished(cached):
        ctl.backoff.remove(key)
        return
    if ctl.stale_writes.defer_if_stale(key, cached["metadata"].get("resourceVersion")):
        return  # our last status write is not in the cache yet: its update event re-queues the key
    mode = js.completion_mode(cached)
    if mode not in (js.NON_INDEXED, js.INDEXED):
        ctl.recorder.event(
            cached, "Warning", "UnknownCompletionMode", "Skipped Job sync because completion mode is unknown"
        )
        return
    state: SyncState | None = None
    result = "error"
    try:
        state = await _prepare(ctl, key, private_copy(cached))
        await _sync(ctl, state)
        result = "success"
    finally:
        action = state.action if state is not None else m.ACTION_RECONCILING
        m.child(m.SYNC_DURATION, mode, result, action).observe(time.perf_counter() - started)
        m.child(m.SYNCS, mode, result, action).inc()


async def _prepare(ctl: JobController, key: str, job: Obj) -> SyncState:
    status = job["status"]
    status.setdefault("uncountedTerminatedPods", {})
    # Read expectations before the pods: a pod arriving in between only defers the sync, never doubles it.
    satisfied = ctl.expectations.satisfied(key)
    pods = await ctl.pods_for_job(job)
    active_pods = [p for p in pods if is_active(p)]
    uncounted = uncounted_sets(status)
    expected_rm = ctl.finalizer_expectations.expected(key)
    new_succeeded, new_failed = new_finished_pods(job, pods, uncounted, expected_rm)
    state = SyncState(
        key=key,
        job=job,
        pods=pods,
        active_pods=active_pods,
        uncounted=uncounted,
        expected_rm=expected_rm,
        terminating=sum(1 for p in pods if is_terminating(p)),
        new_backoff=ctl.backoff.new_record(key, new_succeeded, new_failed),
        satisfied=satisfied,
    )
    state.succeeded = int(status.get("succeeded") or 0) + len(new_succeeded) + len(uncounted[0])
    state.failed = (
        int(status.get("failed") or 0) + non_ignored_failed_count(job, new_failed) + len(uncounted[1])
    )
    return state


def past_active_deadline(job: Obj, now: float) -> bool:
    deadline = js.spec(job).get("activeDeadlineSeconds")
    if deadline is None:
        return False  # before parsing startTime: most Jobs have no deadline
    start = parse_time(js.status(job).get("startTime"))
    if start is None or js.is_suspended(job):
        return False
    return now - start >= float(deadline)


async def _sync(ctl: JobController, state: SyncState) -> None:
    job, status, key = state.job, state.status, state.key
    satisfied = state.satisfied
    now = ctl.now()
    active = len(state.active_pods)
    ready = sum(1 for p in state.active_pods if is_ready(p))
    if status.get("startTime") is None and not js.is_suspended(job):
        status["startTime"] = format_time(now)

    state.finished = _condition_if_true(job, jc.SUCCESS_CRITERIA_MET)
    if state.finished is None:
        target = _condition_if_true(job, jc.FAILURE_TARGET)
        if target is not None:
            state.finished = jc.new_condition(jc.FAILED, "True", target["reason"], target["message"], now)
        elif (message := fail_job_message(job, state.pods)) is not None:
            state.finished = jc.new_condition(
                jc.FAILURE_TARGET, "True", jc.REASON_POD_FAILURE_POLICY, message, now
            )
    if state.finished is None:
        if state.failed > js.backoff_limit(job) or past_backoff_limit_on_failure(job, state.pods):
            state.finished = _failure(jc.REASON_BACKOFF_LIMIT_EXCEEDED, jc.MSG_BACKOFF_LIMIT_EXCEEDED, now)
        elif past_active_deadline(job, now):
            state.finished = _failure(jc.REASON_DEADLINE_EXCEEDED, jc.MSG_DEADLINE_EXCEEDED, now)
        elif js.spec(job).get("activeDeadlineSeconds") is not None and not js.is_suspended(job):
            start = parse_time(status.get("startTime")) or now
            ctl.enqueue_key_after(key, float(js.spec(job)["activeDeadlineSeconds"]) - (now - start))

    if js.is_indexed(job):
        _indexed_state(ctl, state, now)

    suspend_changed = False
    manage_error: BaseException | None = None
    terminating = state.terminating
    if state.finished is not None:
        deleted_ready, deleted, manage_error = await delete_active_pods(ctl, state)
        if deleted != active or not satisfied:
            state.finished = None  # pods or finalizers may remain that the cache has not shown yet
        active -= deleted
        terminating += deleted
        ready -= deleted_ready
    else:
        managed = False
        if satisfied and job["metadata"].get("deletionTimestamp") is None:
            active, terminating, deleted_ready, state.action, manage_error = await manage_job(ctl, state)
            ready -= deleted_ready
            managed = True
        completions = js.completions(job)
        if completions is None:
            complete = state.succeeded > 0 and active == 0
        else:
            complete = state.succeeded >= completions and active == 0
        if complete:
            state.finished = jc.new_condition(
                jc.SUCCESS_CRITERIA_MET,
                "True",
                jc.REASON_COMPLETIONS_REACHED,
                jc.MSG_COMPLETIONS_REACHED,
                now,
            )
        elif managed:
            suspend_changed = _update_suspended(ctl, state, now)
    state.terminating = terminating
    needs_update = (
        suspend_changed
        or active != int(status.get("active") or 0)
        or status.get("ready") != ready
        or status.get("terminating") != terminating
    )
    status["active"] = active
    status["ready"] = ready
    status["terminating"] = terminating
    await track_status(ctl, state, needs_update)
    if manage_error is not None:
        raise manage_error


def _failure(reason: str, message: str, now: float) -> jc.Condition:
    """The interim FailureTarget; Failed follows once no pod is left terminating."""
    return jc.new_condition(jc.FAILURE_TARGET, "True", reason, message, now)


def _indexed_state(ctl: JobController, state: SyncState, now: float) -> None:
    job = state.job
    completions = js.completions(job) or 0
    state.prev_succeeded, state.succeeded_indexes = succeeded_indexes(job, state.pods)
    state.succeeded = state.succeeded_indexes.total()
    if js.has_backoff_limit_per_index(job):
        state.failed_indexes = failed_indexes(job, state.pods)
        failed_total = state.failed_indexes.total()
        if state.finished is None:
            max_failed = js.spec(job).get("maxFailedIndexes")
            if max_failed is not None and failed_total > int(max_failed):
                state.finished = _failure(
                    jc.REASON_MAX_FAILED_INDEXES_EXCEEDED, jc.MSG_MAX_FAILED_INDEXES_EXCEEDED, now
                )
            elif failed_total > 0 and failed_total + state.succeeded_indexes.total() >= completions:
                state.finished = _failure(jc.REASON_FAILED_INDEXES, jc.MSG_FAILED_INDEXES, now)
        state.delayed = pods_with_delayed_deletion(
            job,
            state.pods,
            succeeded=state.succeeded_indexes,
            failed=state.failed_indexes,
            expected_rm=state.expected_rm,
        )
    if state.finished is None and _condition_if_true(job, jc.SUCCESS_CRITERIA_MET) is None:
        message = match_success_policy(
            js.spec(job).get("successPolicy"), completions, state.succeeded_indexes
        )
        if message is not None:
            state.finished = jc.new_condition(
                jc.SUCCESS_CRITERIA_MET, "True", jc.REASON_SUCCESS_POLICY, message, now
            )


def _update_suspended(ctl: JobController, state: SyncState, now: float) -> bool:
    job, status = state.job, state.status
    conditions = status.setdefault("conditions", [])
    if js.is_suspended(job):
        changed = jc.ensure_condition(conditions, jc.SUSPENDED, "True", "JobSuspended", "Job suspended", now)
        if changed:
            ctl.recorder.event(job, "Normal", "Suspended", "Job suspended")
        return changed
    changed = jc.ensure_condition(conditions, jc.SUSPENDED, "False", "JobResumed", "Job resumed", now)
    if changed:
        ctl.recorder.event(job, "Normal", "Resumed", "Job resumed")
        # activeDeadlineSeconds counts continuous activity: a resumed Job starts its clock again.
        status["startTime"] = format_time(now)
    return changed
