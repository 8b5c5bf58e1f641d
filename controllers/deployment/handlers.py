"""Informer event handlers of the Deployment controller (upstream: pkg/controller/deployment/
deployment_controller.go `addDeployment`..., `addReplicaSet`, `updateReplicaSet`, `deleteReplicaSet`,
`deletePod`). They only read caches and enqueue, so they run inline."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from controllers.common.podutil import Obj, is_terminating, labels_of, meta
from controllers.deployment.replicas import RECREATE, strategy_type
from manager import DeletedFinalStateUnknown, Request, controller_owner, final_object

if TYPE_CHECKING:
    from controllers.deployment.controller import DeploymentController


class DeploymentEvents:
    def __init__(self, ctl: DeploymentController) -> None:
        self.ctl = ctl

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self.ctl.enqueue(Request.for_object(obj))

    def on_update(self, old: Any, new: Any) -> None:
        self.ctl.enqueue(Request.for_object(new))

    def on_delete(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        d = final_object(obj)
        self.ctl.forget_deployment(str(meta(d).get("uid") or ""))
        self.ctl.enqueue(Request.for_object(d))


class ReplicaSetEvents:
    def __init__(self, ctl: DeploymentController) -> None:
        self.ctl = ctl

    def _enqueue_owner(self, rs: Obj, ref: Any) -> bool:
        d = self.ctl.resolve_controller_ref(str(meta(rs).get("namespace") or ""), ref)
        if d is not None:
            self.ctl.enqueue(Request.for_object(d))
        return d is not None

    def _enqueue_selecting(self, rs: Obj) -> None:
        for d in self.ctl.deployments_selecting(rs):
            self.ctl.enqueue(Request.for_object(d))

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        rs: Obj = obj
        if is_terminating(rs):
            self.on_delete(rs)
            return
        ref = controller_owner(rs)
        if ref is not None:
            self._enqueue_owner(rs, ref)
            return
        self._enqueue_selecting(rs)  # an orphan: whoever matches may adopt it

    def on_update(self, old: Any, new: Any) -> None:
        if meta(old).get("resourceVersion") == meta(new).get("resourceVersion"):
            return
        cur_ref, old_ref = controller_owner(new), controller_owner(old)
        ref_changed = cur_ref != old_ref
        if ref_changed and old_ref is not None:
            self._enqueue_owner(old, old_ref)
        if cur_ref is not None:
            self._enqueue_owner(new, cur_ref)
            return
        if labels_of(old) != labels_of(new) or ref_changed:
            self._enqueue_selecting(new)

    def on_delete(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        rs = final_object(obj)
        self.ctl.forget_replicaset(str(meta(rs).get("uid") or ""))
        ref = controller_owner(rs)
        if ref is not None:
            self._enqueue_owner(rs, ref)


class PodEvents:
    """Only deletions matter: a Recreate Deployment waits for its last old pod to go."""

    def __init__(self, ctl: DeploymentController) -> None:
        self.ctl = ctl

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        return None

    def on_update(self, old: Any, new: Any) -> None:
        return None

    def on_delete(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        pod = final_object(obj)
        d = self.ctl.deployment_of_pod(pod)
        if d is None or strategy_type(d) != RECREATE:
            return
        if self.ctl.pod_count(d) == 0:
            self.ctl.enqueue(Request.for_object(d))
