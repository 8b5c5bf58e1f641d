"""How many pods a Job should run, and the creates and deletes that get it there (upstream's manageJob)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from controllers.common.ranking import sort_active_pods
from controllers.common.slowstart import slow_start_batch
from controllers.job import metrics as m
from controllers.job import spec as js
from controllers.job.indexed.intervals import Intervals, first_pending_indexes, split_for_removal, valid_index
from controllers.job.indexed.state import replacement_failure_counts
from controllers.job.podcontrol import build_pod, is_namespace_terminating
from controllers.job.tracking.counting import has_tracking_finalizer, is_ready, is_terminating
from manager import NotFound

if TYPE_CHECKING:
    from controllers.job.controller import JobController
    from controllers.job.sync import SyncState

Obj = dict[str, Any]
MAX_POD_CREATE_DELETE_PER_SYNC = 500


def want_active(job: Obj, active: int, succeeded: int) -> int:
    parallelism = js.parallelism(job)
    completions = js.completions(job)
    if completions is None:
        # Work-queue mode: once any pod succeeded, no new pods; the running ones finish on their own.
        return active if succeeded > 0 else parallelism
    return max(0, min(parallelism, completions - succeeded))


def pods_for_removal(job: Obj, pods: Sequence[Obj], at_least: int) -> list[Obj]:
    """Indexed: duplicates, index-less and out-of-range pods first; then the least valuable in ActivePods
    order until `at_least` are chosen."""
    remove: list[Obj] = []
    left: list[Obj] = list(pods)
    if js.is_indexed(job):
        remove, left = split_for_removal(pods, js.completions(job) or 0, sort_active_pods)
    if len(remove) < at_least:
        remove.extend(sort_active_pods(left)[: at_least - len(remove)])
    return remove


async def manage_job(ctl: JobController, state: SyncState) -> tuple[int, int, int, str, BaseException | None]:
    """Returns (active, terminating, ready pods deleted, metrics action, error)."""
    job, key = state.job, state.key
    active = len(state.active_pods)
    terminating = state.terminating
    if js.is_suspended(job):
        doomed = pods_for_removal(job, state.active_pods, active)
        ctl.expectations.expect_deletions(key, len(doomed))
        removed, removed_ready, error = await delete_job_pods(ctl, job, key, doomed)
        return active - removed, terminating + removed, removed_ready, m.ACTION_PODS_DELETED, error

    want = want_active(job, active, state.succeeded)
    doomed = pods_for_removal(job, state.active_pods, max(active - want, 0))[:MAX_POD_CREATE_DELETE_PER_SYNC]
    if doomed:
        # Creating and deleting in the same sync is never done; deleting wins.
        ctl.expectations.expect_deletions(key, len(doomed))
        removed, removed_ready, error = await delete_job_pods(ctl, job, key, doomed)
        return active - removed, terminating + removed, removed_ready, m.ACTION_PODS_DELETED, error

    blocking = terminating if js.only_replace_failed_pods(job) else 0
    diff = want - blocking - active
    if diff <= 0:
        return active, terminating, 0, m.ACTION_TRACKING, None
    if not js.has_backoff_limit_per_index(job):
        remaining = ctl.backoff.remaining(state.new_backoff)
        if remaining > 0:
            ctl.enqueue_key_with_delay(key, remaining)
            return active, terminating, 0, m.ACTION_PODS_CREATED, None
    diff = min(diff, MAX_POD_CREATE_DELETE_PER_SYNC)
    indexes: list[int] | None = None
    if js.is_indexed(job):
        indexes = first_pending_indexes(_non_pending(state), diff, js.completions(job) or 0)
        if js.has_backoff_limit_per_index(job):
            indexes, remaining = _indexes_ready_now(ctl, indexes, state.delayed)
            if remaining > 0:
                ctl.enqueue_key_with_delay(key, remaining)
                return active, terminating, 0, m.ACTION_PODS_CREATED, None
        diff = len(indexes)
    if diff == 0:
        return active, terminating, 0, m.ACTION_PODS_CREATED, None
    created, error = await create_pods(ctl, state, diff, indexes)
    return active + created, terminating, 0, m.ACTION_PODS_CREATED, error


def _non_pending(state: SyncState) -> Intervals:
    job = state.job
    completions = js.completions(job) or 0
    active = [ix for p in state.active_pods if (ix := valid_index(p, completions)) is not None]
    result = state.succeeded_indexes.with_indexes(active)
    if state.failed_indexes is not None:
        result = result.merge(state.failed_indexes)
    if js.only_replace_failed_pods(job):
        terminating = [
            ix for p in state.pods if is_terminating(p) and (ix := valid_index(p, completions)) is not None
        ]
        result = result.with_indexes(terminating)
    return result


def _indexes_ready_now(
    ctl: JobController, indexes: list[int], delayed: dict[int, Obj]
) -> tuple[list[int], float]:
    """Per-index backoff: the indexes whose backoff has passed, else the shortest wait among the others."""
    ready: list[int] = []
    shortest: float | None = None
    for index in indexes:
        remaining = ctl.backoff.remaining_for_index(delayed.get(index))
        if remaining <= 0:
            ready.append(index)
        elif shortest is None or remaining < shortest:
            shortest = remaining
    if ready:
        return ready, 0.0
    return [], shortest or 0.0


async def create_pods(
    ctl: JobController, state: SyncState, count: int, indexes: list[int] | None
) -> tuple[int, BaseException | None]:
    """Create `count` pods in slow-start batches. Returns (created, first error)."""
    job, key = state.job, state.key
    per_index = js.has_backoff_limit_per_index(job)
    queue = iter(indexes or ())
    ctl.expectations.expect_creations(key, count)
    attempted = 0
    swallowed = 0

    async def create(index: int | None) -> None:
        nonlocal attempted, swallowed
        attempted += 1
        replaced = state.delayed.get(index) if index is not None else None
        counts = replacement_failure_counts(job, replaced) if per_index else None
        pod = build_pod(job, index, counts)
        try:
            await ctl.pod_control.create(job, pod)
        except Exception as exc:
            ctl.expectations.creation_observed(key)  # the informer will never see this pod
            if is_namespace_terminating(exc):
                swallowed += 1  # the namespace is going away: not worth an error
                return
            raise

    def next_create() -> Any:
        return create(next(queue, None) if indexes is not None else None)

    if count == 1:
        # slow_start_batch's first (and only) batch of one, without its batch bookkeeping.
        successes = 1
        error: BaseException | None = None
        try:
            await next_create()
        except Exception as exc:
            successes, error = 0, exc
    else:
        result = await slow_start_batch(count, next_create)
        successes, error = result.successes, result.error
    for _ in range(count - attempted):
        ctl.expectations.creation_observed(key)  # skipped after a failed batch
    created = successes - swallowed
    _record_creations(job, state, created, attempted - successes)
    return created, error


def _record_creations(job: Obj, state: SyncState, succeeded: int, failed: int) -> None:
    reason = m.CREATE_NEW
    if job["spec"].get("podReplacementPolicy") == "Failed" and state.failed > 0:
        reason = m.CREATE_RECREATE_FAILED
    elif state.failed > 0 or state.terminating > 0:
        reason = m.CREATE_RECREATE_TERMINATING_OR_FAILED
    if succeeded > 0:
        m.child(m.PODS_CREATION, reason, m.SUCCEEDED).inc(succeeded)
    if failed > 0:
        m.child(m.PODS_CREATION, reason, m.FAILED).inc(failed)


async def delete_job_pods(
    ctl: JobController, job: Obj, key: str, pods: Sequence[Obj]
) -> tuple[int, int, BaseException | None]:
    """Scale-down / suspend deletion: the finalizer goes first, so these pods are never counted as failed.
    Returns (deleted, of which ready, first error)."""
    deleted_ready = 0

    async def delete(pod: Obj) -> bool:
        nonlocal deleted_ready
        try:
            if has_tracking_finalizer(pod):
                await ctl.pod_control.remove_tracking_finalizer(pod)
            await ctl.pod_control.delete(job, pod)
        except NotFound:
            ctl.expectations.deletion_observed(key)
            deleted_ready += is_ready(pod)
            return True
        except Exception:
            ctl.expectations.deletion_observed(key)
            raise
        deleted_ready += is_ready(pod)
        return True

    deleted, error = await _gather_deletes(delete, pods)
    return deleted, deleted_ready, error


async def delete_active_pods(ctl: JobController, state: SyncState) -> tuple[int, int, BaseException | None]:
    """Failure/success path: delete keeping the finalizer, so the pods are counted. (ready, deleted, error)"""
    deleted_ready = 0

    async def delete(pod: Obj) -> bool:
        nonlocal deleted_ready
        if is_ready(pod):
            deleted_ready += 1
        with contextlib.suppress(NotFound):
            await ctl.pod_control.delete(state.job, pod)
        return True

    deleted, error = await _gather_deletes(delete, state.active_pods)
    return deleted_ready, deleted, error


async def _gather_deletes(fn: Any, pods: Sequence[Obj]) -> tuple[int, BaseException | None]:
    results = await asyncio.gather(*(fn(p) for p in pods), return_exceptions=True)
    errors = [r for r in results if isinstance(r, BaseException)]
    for err in errors:
        if not isinstance(err, Exception):
            raise err
    return len(pods) - len(errors), (errors[0] if errors else None)
