"""The status half of a sync (upstream's trackJobStatusAndRemoveFinalizers): record newly finished pods in
status.uncountedTerminatedPods, flush, remove their finalizers, move them into the counters, and add the
terminal condition once nothing is left uncounted or terminating."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from controllers.job import conditions as jc
from controllers.job import metrics as m
from controllers.job import spec as js
from controllers.job.indexed.intervals import Intervals
from controllers.job.tracking.counting import clean_uncounted, has_tracking_finalizer, plan_tracking, uid

if TYPE_CHECKING:
    from controllers.job.controller import JobController
    from controllers.job.sync import SyncState

Obj = dict[str, Any]
# The standard logger behind JobController.log (structlog is configured on top of the stdlib's loggers).
_debug_log = logging.getLogger("controllers.job.controller")
Counters = tuple[int, int, str, str | None]


def counters(status: Mapping[str, Any]) -> Counters:
    return (
        int(status.get("succeeded") or 0),
        int(status.get("failed") or 0),
        str(status.get("completedIndexes") or ""),
        status.get("failedIndexes"),
    )


async def track_status(ctl: JobController, state: SyncState, needs_flush: bool) -> None:
    job, status = state.job, state.status
    now = ctl.now()
    with_finalizer = {
        uid(p) for p in state.pods if has_tracking_finalizer(p) and uid(p) not in state.expected_rm
    }
    old = counters(status)
    if clean_uncounted(status, with_finalizer):
        needs_flush = True
    plan = plan_tracking(
        job,
        status,
        state.pods,
        uncounted=state.uncounted,
        expected_rm=state.expected_rm,
        finishing=state.finished is not None,
        prev_succeeded=state.prev_succeeded,
        delayed_per_index=state.delayed,
    )
    needs_flush = needs_flush or plan.changed
    if js.is_indexed(job):
        state.succeeded_indexes = state.succeeded_indexes.with_indexes(plan.new_succeeded_indexes)
        completed = str(state.succeeded_indexes)
        if completed != (status.get("completedIndexes") or ""):
            needs_flush = True
        status["succeeded"] = state.succeeded_indexes.total()
        status["completedIndexes"] = completed
        failed_text = str(state.failed_indexes) if state.failed_indexes is not None else None
        if status.get("failedIndexes") != failed_text:
            needs_flush = True
            if failed_text is None:
                status.pop("failedIndexes", None)
            else:
                status["failedIndexes"] = failed_text
    finished = state.finished
    conditions = status.setdefault("conditions", [])
    if finished is not None and finished["type"] == jc.FAILURE_TARGET:
        conditions.append(finished)  # recorded before any finalizer goes, so a restart keeps the verdict
        needs_flush = True
        finished = jc.new_condition(jc.FAILED, "True", finished["reason"], finished["message"], now)
    if finished is not None and finished["type"] == jc.SUCCESS_CRITERIA_MET:
        if not jc.is_condition_true(conditions, jc.SUCCESS_CRITERIA_MET):
            conditions.append(finished)
            needs_flush = True
        finished = jc.new_condition(jc.COMPLETE, "True", finished["reason"], finished["message"], now)
    state.finished = finished

    needs_flush, old = await _flush_and_remove_finalizers(
        ctl, state, plan.remove_finalizer, with_finalizer, old, plan.policy_actions, needs_flush
    )
    job_finished = not plan.reached_max_uncounted and _enact_finished(state, now)
    if job_finished:
        needs_flush = True
    if needs_flush:
        if job_finished:
            state.job = await ctl.update_status(state.job)  # the event names the new resourceVersion
            _record_finished(ctl, state.job, state.finished)
        else:
            await ctl.write_status(state.job)  # the sync's last request: nothing reads the answer
        _record_pods_finished(state.job, old)  # the status as sent (and as stored)


async def _flush_and_remove_finalizers(
    ctl: JobController,
    state: SyncState,
    pods: list[Obj],
    with_finalizer: set[str],
    old: Counters,
    policy_actions: Any,
    needs_flush: bool,
) -> tuple[bool, Counters]:
    if needs_flush:
        # Step 1: the UIDs (or completed indexes) are durable before any finalizer is removed.
        if pods or state.finished is not None:
            state.job = await ctl.update_status(state.job)
        else:
            # The sync's last request (a Job's first sync): no finalizer to remove, so nothing moves into
            # the counters after it (clean_uncounted ran on the same pods), and no condition to add.
            await ctl.write_status(state.job)
        ctl.backoff.update(state.new_backoff)
        _record_pods_finished(state.job, old)
        old = counters(state.status)
        needs_flush = False
    for action, count in policy_actions.items():
        m.child(m.POD_FAILURES_HANDLED_BY_POLICY, action).inc(count)
    error: BaseException | None = None
    if pods:
        # Step 2: remove the finalizers; expected so a stale cache cannot make us count these pods again.
        ctl.finalizer_expectations.expect_removal(state.key, {uid(p) for p in pods})
        try:
            done, error = await ctl.pod_control.remove_finalizers(pods)
        except BaseException:
            # Nothing is known to be removed: stop expecting it, or the pods would be counted while they
            # still carry the finalizer (and counted again later).
            for pod in pods:
                ctl.finalizer_expectations.removal_observed(state.key, uid(pod))
            raise
        for pod, ok in zip(pods, done, strict=True):
            if ok:
                with_finalizer.discard(uid(pod))
            else:
                ctl.finalizer_expectations.removal_observed(state.key, uid(pod))
    # Step 3: pods whose finalizer is gone move from uncounted into the counters.
    if clean_uncounted(state.status, with_finalizer):
        needs_flush = True
    if error is not None:
        if needs_flush:
            await ctl.write_status(state.job)  # the sync ends with `error`: nothing reads the answer
        raise error
    return needs_flush, old


def _enact_finished(state: SyncState, now: float) -> bool:
    finished = state.finished
    if finished is None:
        return False
    uncounted = state.status.get("uncountedTerminatedPods") or {}
    if uncounted.get("succeeded") or uncounted.get("failed"):
        return False
    if state.terminating > 0:
        return False
    conditions = state.status.setdefault("conditions", [])
    jc.ensure_condition(conditions, finished["type"], "True", finished["reason"], finished["message"], now)
    if finished["type"] == jc.COMPLETE:
        state.status["completionTime"] = finished["lastTransitionTime"]
    return True


def _record_finished(ctl: JobController, job: Obj, finished: jc.Condition | None) -> None:
    if finished is None:
        return
    mode = js.completion_mode(job)
    if _debug_log.isEnabledFor(logging.DEBUG):  # a filtered-out structlog debug() still costs ~2.5 µs
        ctl.log.debug(  # the Job's key is bound by the runner; the Completed/Failed event is the record
            "job finished",
            condition=finished["type"],
            reason=finished["reason"],
            succeeded=js.status(job).get("succeeded", 0),
            failed=js.status(job).get("failed", 0),
        )
    if finished["type"] == jc.COMPLETE:
        completions = js.completions(job)
        if completions is not None and int(js.status(job).get("succeeded") or 0) > completions:
            ctl.recorder.event(
                job,
                "Warning",
                "TooManySucceededPods",
                "Too many succeeded pods running after completion count reached",
            )
        ctl.recorder.event(job, "Normal", "Completed", "Job completed")
        m.child(m.JOBS_FINISHED, mode, m.SUCCEEDED, finished["reason"]).inc()
    else:
        ctl.recorder.event(job, "Warning", finished["reason"], finished["message"])
        m.child(m.JOBS_FINISHED, mode, m.FAILED, finished["reason"]).inc()


def _record_pods_finished(job: Obj, old: Counters) -> None:
    mode = js.completion_mode(job)
    new = counters(js.status(job))
    if js.is_indexed(job):
        completions = js.completions(job) or 0
        label = "perIndex" if js.has_backoff_limit_per_index(job) else "global"
        done = Intervals.parse(new[2], completions).total() - Intervals.parse(old[2], completions).total()
        if done > 0:
            m.child(m.FINISHED_INDEXES, m.SUCCEEDED, label).inc(done)
        if js.has_backoff_limit_per_index(job) and new[3] != old[3]:
            failed = (
                Intervals.parse(new[3], completions).total() - Intervals.parse(old[3], completions).total()
            )
            if failed > 0:
                m.child(m.FINISHED_INDEXES, m.FAILED, label).inc(failed)
    else:
        done = new[0] - old[0]
    if done > 0:
        m.child(m.PODS_FINISHED, mode, m.SUCCEEDED).inc(done)
    if new[1] - old[1] > 0:
        m.child(m.PODS_FINISHED, mode, m.FAILED).inc(new[1] - old[1])
