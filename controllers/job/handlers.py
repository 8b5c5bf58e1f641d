"""Informer event handlers of the Job controller: which Job keys and orphan pods to queue, and when.

Job adds, deletes and spec changes sync at once; pod events and status-only Job updates are batched
(`sync_batch_period`, 1 s upstream; up to 100 ms more when other Jobs are due then) so a burst of pod
changes costs one sync. Pod events also settle the creation/deletion expectations and the finalizer-removal
expectations.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from controllers.common.podutil import Selector, labels_of, parse_time
from controllers.job import metrics as m
from controllers.job import spec as js
from controllers.job.conditions import is_job_finished
from controllers.job.tracking.counting import has_tracking_finalizer, is_terminal, uid
from manager import DeletedFinalStateUnknown, controller_owner, final_object

if TYPE_CHECKING:
    from controllers.job.controller import JobController

Obj = dict[str, Any]


def _key(obj: Obj) -> str:
    meta = obj["metadata"]
    return f"{meta.get('namespace', '')}/{meta['name']}"


def _finished_with_finalizer(pod: Obj | None) -> bool:
    # The finalizer first: most pods in a cluster are not a Job's, and the old object's status is cold.
    return pod is not None and has_tracking_finalizer(pod) and is_terminal(pod)


def record_finished_pod_with_finalizer(old: Obj | None, new: Obj | None) -> None:
    was, now = _finished_with_finalizer(old), _finished_with_finalizer(new)
    if was != now:
        m.child(m.TERMINATED_PODS_TRACKING_FINALIZER, "add" if now else "delete").inc()


class JobEventHandler:
    def __init__(self, ctl: JobController) -> None:
        self.ctl = ctl

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self.ctl.enqueue_key(_key(obj))
        external = js.external_manager(obj, self.ctl.managed_by)
        if external is not None:
            m.child(m.JOBS_BY_EXTERNAL_CONTROLLER, external).inc()

    def on_update(self, old: Any, new: Any) -> None:
        key = _key(new)
        self.ctl.stale_writes.observed(key, new["metadata"].get("resourceVersion"))
        if old["metadata"].get("generation") == new["metadata"].get("generation"):
            self.ctl.enqueue_key_batched(key)
        else:
            self.ctl.enqueue_key(key)
        if is_job_finished(new):
            # Backup: a finished Job should hold no finalizers any more.
            self.ctl.cleanup_pod_finalizers(new)
        deadline = js.spec(new).get("activeDeadlineSeconds")
        if deadline is None or js.spec(old).get("activeDeadlineSeconds") == deadline:
            return
        start = parse_time(js.status(new).get("startTime"))  # parsed only when the deadline changed
        if start is not None:
            self.ctl.enqueue_key_after(key, float(deadline) - (self.ctl.now() - start))

    def on_delete(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        job = final_object(obj)
        self.ctl.stale_writes.forget(_key(job))
        self.ctl.enqueue_key(_key(job))
        self.ctl.cleanup_pod_finalizers(job)


class PodEventHandler:
    def __init__(self, ctl: JobController) -> None:
        self.ctl = ctl

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        pod: Obj = obj
        record_finished_pod_with_finalizer(None, pod)
        if pod["metadata"].get("deletionTimestamp") is not None:
            # Seen for the first time while already being deleted (e.g. after a restart): not a creation.
            self._deleted(pod, final=False)
            return
        ref = controller_owner(pod)
        if ref is not None:
            job = self.ctl.resolve_controller_ref(pod["metadata"].get("namespace", ""), ref)
            if job is None:
                return
            key = _key(job)
            self.ctl.expectations.creation_observed(key)
            self.ctl.enqueue_key_batched(key)
            return
        if has_tracking_finalizer(pod):
            self.ctl.enqueue_orphan(pod)
        for job in self.ctl.jobs_selecting(pod):
            self.ctl.enqueue_key_batched(_key(job))

    def on_update(self, old: Any, new: Any) -> None:
        # Called for every pod update of the cluster, most of them not a Job's (benchmarks/
        # controller_handlers.py measures it): metadata read once, the finalizer looked up once per pod, the
        # controller reference once when the ownerReferences are unchanged (nearly always).
        old_pod: Obj = old
        pod: Obj = new
        old_meta, meta = old_pod["metadata"], pod["metadata"]
        if old_meta.get("resourceVersion") == meta.get("resourceVersion"):
            return  # a resync
        had_finalizer = js.TRACKING_FINALIZER in (old_meta.get("finalizers") or ())
        has_finalizer = js.TRACKING_FINALIZER in (meta.get("finalizers") or ())
        if had_finalizer or has_finalizer:  # without the finalizer on either, nothing to count
            record_finished_pod_with_finalizer(old_pod, pod)
        namespace = meta.get("namespace", "")
        if meta.get("deletionTimestamp") is not None:
            self._deleted(pod, final=False)
        finalizer_removed = not has_finalizer
        ref = controller_owner(pod)
        if meta.get("ownerReferences") == old_meta.get("ownerReferences"):
            old_ref, ref_changed = ref, False
        else:
            old_ref = controller_owner(old_pod)
            ref_changed = ref != old_ref
        if ref_changed and old_ref is not None:
            job = self.ctl.resolve_controller_ref(namespace, old_ref)
            if job is not None:
                if finalizer_removed:
                    self.ctl.finalizer_expectations.removal_observed(_key(job), uid(pod))
                self.ctl.enqueue_key_batched(_key(job))
        if ref is not None:
            if ref.get("kind") != "Job":
                return  # not a Job's pod (resolve_controller_ref's first check, without the call)
            job = self.ctl.resolve_controller_ref(namespace, ref)
            if job is None:
                return
            key = _key(job)
            if finalizer_removed:
                self.ctl.finalizer_expectations.removal_observed(key, uid(pod))
            self.ctl.enqueue_key_batched(key)
            return
        if has_finalizer:
            self.ctl.enqueue_orphan(pod)
        if ref_changed or labels_of(pod) != labels_of(old_pod):
            for job in self.ctl.jobs_selecting(pod):
                self.ctl.enqueue_key_batched(_key(job))

    def on_delete(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        pod = final_object(obj)
        record_finished_pod_with_finalizer(pod, None)
        self._deleted(pod, final=True)

    def _deleted(self, pod: Obj, *, final: bool) -> None:
        ref = controller_owner(pod)
        with_finalizer = has_tracking_finalizer(pod)
        if ref is None:
            if with_finalizer:
                self.ctl.enqueue_orphan(pod)  # it may have lost its Job to the garbage collector
            return
        job = self.ctl.resolve_controller_ref(pod["metadata"].get("namespace", ""), ref)
        if job is None or is_job_finished(job):
            if with_finalizer:
                self.ctl.enqueue_orphan(pod)  # no sync will remove this finalizer
            return
        key = _key(job)
        self.ctl.expectations.deletion_observed(key)
        if final or not with_finalizer:
            self.ctl.finalizer_expectations.removal_observed(key, uid(pod))
        self.ctl.enqueue_key_batched(key)


def selector_matches(job: Obj, pod: Obj) -> bool:
    try:
        return Selector.from_label_selector(js.spec(job).get("selector")).matches(labels_of(pod))
    except ValueError:
        return False
