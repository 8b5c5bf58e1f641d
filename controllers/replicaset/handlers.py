"""Informer event handlers of the ReplicaSet controller (upstream: pkg/controller/replicaset/replica_set.go
`addPod`, `updatePod`, `deletePod`, `updateRS`): which keys an event wakes up, and which expectations it
fulfils."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from controllers.common.podutil import Obj, is_ready, is_terminating, meta
from manager import DeletedFinalStateUnknown, Request, controller_owner, final_object

if TYPE_CHECKING:
    from controllers.replicaset.controller import ReplicaSetController


class ReplicaSetEvents:
    """addRS / updateRS / deleteRS."""

    def __init__(self, ctl: ReplicaSetController) -> None:
        self.ctl = ctl

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self.ctl.enqueue(Request.for_object(obj))

    def on_update(self, old: Any, new: Any) -> None:
        if meta(old).get("uid") != meta(new).get("uid"):
            # Deleted and re-created between two events: the old one's expectations must go.
            self.on_delete(old)
        self.ctl.enqueue(Request.for_object(new))

    def on_delete(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        rs = final_object(obj)
        request = Request.for_object(rs)
        self.ctl.forget_replicaset(request.key, str(meta(rs).get("uid") or ""))
        self.ctl.enqueue(request)


class PodEvents:
    """addPod / updatePod / deletePod."""

    def __init__(self, ctl: ReplicaSetController) -> None:
        self.ctl = ctl
        self._resolve = ctl.resolve_controller_ref

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        pod: Obj = obj
        if is_terminating(pod):
            # Already being deleted when first seen (e.g. after a restart): not a creation we wait for.
            self.on_delete(pod)
            return
        ref = controller_owner(pod)
        if ref is not None:
            rs = self.ctl.resolve_controller_ref(str(meta(pod).get("namespace") or ""), ref)
            if rs is None:
                return
            key = Request.for_object(rs)
            self.ctl.expectations.creation_observed(key.key)
            self.ctl.enqueue(key)
            return
        # An orphan: every matching ReplicaSet may want to adopt it. No creation observed.
        for rs in self.ctl.replicasets_selecting(pod):
            self.ctl.enqueue(Request.for_object(rs))

    def on_update(self, old: Any, new: Any) -> None:
        # The pods informer calls this for every pod update of the cluster (benchmarks/controller_handlers.py
        # measures it): metadata read once per pod, the controller reference looked up once when the
        # ownerReferences are unchanged (nearly always), the queue's own `add` called directly.
        old_pod: Obj = old
        cur: Obj = new
        old_meta, cur_meta = old_pod.get("metadata") or {}, cur.get("metadata") or {}
        if old_meta.get("resourceVersion") == cur_meta.get("resourceVersion"):
            return  # a resync, nothing changed
        label_changed = (old_meta.get("labels") or {}) != (cur_meta.get("labels") or {})
        if cur_meta.get("deletionTimestamp"):
            # Graceful deletion started: the ReplicaSet replaces the pod now, not when it is finally gone.
            self.on_delete(cur)
            if label_changed:
                self.on_delete(old_pod)
            return
        cur_ref = controller_owner(cur)
        if cur_meta.get("ownerReferences") == old_meta.get("ownerReferences"):
            old_ref, ref_changed = cur_ref, False
        else:
            old_ref = controller_owner(old_pod)
            ref_changed = cur_ref != old_ref
        namespace = str(cur_meta.get("namespace") or "")
        if ref_changed and old_ref is not None:
            previous = self._resolve(str(old_meta.get("namespace") or ""), old_ref)
            if previous is not None:
                self.ctl.enqueue(Request.for_object(previous))
        if cur_ref is not None:
            rs = self._resolve(namespace, cur_ref)
            if rs is None:
                return
            request = Request(namespace, rs["metadata"]["name"])  # resolved in the pod's namespace
            self.ctl.queue.add(request)
            min_ready = (rs.get("spec") or {}).get("minReadySeconds")
            if min_ready and int(min_ready) > 0 and is_ready(cur) and not is_ready(old_pod):
                # Check availability again once minReadySeconds have passed (+1 s against timer skew).
                self.ctl.enqueue_after(request, int(min_ready) + 1.0)
            return
        if label_changed or ref_changed:
            for rs in self.ctl.replicasets_selecting(cur):
                self.ctl.enqueue(Request.for_object(rs))

    def on_delete(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        pod = final_object(obj)
        ref = controller_owner(pod)
        if ref is None:
            return  # nobody waits for an orphan to go
        rs = self.ctl.resolve_controller_ref(str(meta(pod).get("namespace") or ""), ref)
        if rs is None:
            return
        request = Request.for_object(rs)
        pod_key = f"{meta(pod).get('namespace')}/{meta(pod).get('name')}"
        self.ctl.expectations.deletion_observed(request.key, pod_key)
        self.ctl.enqueue(request)
