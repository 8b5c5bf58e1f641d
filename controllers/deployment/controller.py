"""The Deployment controller: drive ReplicaSets so that a Deployment's template rolls out as its strategy
says (upstream: pkg/controller/deployment/deployment_controller.go `syncDeployment`,
`getReplicaSetsForDeployment`, `handleErr`).

One reconcile = one syncDeployment on a private copy of the cached Deployment: claim ReplicaSets, then
status only (being deleted), paused conditions, then scale (paused or resized), roll back (annotation), or
roll out by strategy. No expectations: every write goes through optimistic concurrency, and our own writes
stand in for cached objects until the cache has caught up (so the next sync neither conflicts nor undoes).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import Any, ClassVar

from pydantic import Field

from controllers.common.claims import ControllerRefManager
from controllers.common.podutil import (
    Obj,
    Selector,
    ensure_indexer,
    labels_of,
    meta,
)
from controllers.common.selectors import SelectorCache
from controllers.deployment.conditions import check_paused_conditions
from controllers.deployment.handlers import DeploymentEvents, PodEvents, ReplicaSetEvents
from controllers.deployment.replicas import RECREATE, ROLLING_UPDATE, strategy_type
from controllers.deployment.rollback import rollback, rollback_to
from controllers.deployment.rollout import Rollout, deep_copy
from controllers.deployment.strategies import (
    is_scaling_event,
    rollout_recreate,
    rollout_rolling,
    sync_scaling,
)
from controllers.deployment.writememo import WriteMemo
from manager import (
    CONTROLLER_UID_INDEX,
    DEPLOYMENTS,
    PODS,
    REPLICASETS,
    ApiError,
    Controller,
    ControllerContext,
    ControllerFlags,
    PolicyRule,
    Request,
    Result,
    SharedInformer,
    TerminalError,
    Watch,
    WatchesWith,
    controller_owner,
    controller_uid_index,
    orphan_index_key,
)

MAX_RETRIES = 15  # then the key is dropped until the next event, as upstream's handleErr


class DeploymentFlags(ControllerFlags):
    """deployment-controller's flags (kube-controller-manager's DeploymentControllerOptions)."""

    concurrent_deployment_syncs: int = Field(
        5, gt=0, description="Deployments synced concurrently (workers of deployment-controller)."
    )


class DeploymentController(Controller):
    name = "deployment-controller"
    aliases = ("deployment",)
    enabled_by_default = True
    flags = DeploymentFlags
    concurrency = "concurrent_deployment_syncs"
    queue_name = "deployment"
    # Each verb is a call it makes (the event sender's rules are the manager's, not repeated here).
    rbac = (
        PolicyRule(("apps",), ("deployments",), ("get", "list", "watch", "update")),  # update: rollback
        PolicyRule(("apps",), ("deployments/status",), ("update",)),
        PolicyRule(("apps",), ("deployments/finalizers",), ("update",)),  # blockOwnerDeletion on its RSs
        PolicyRule(("apps",), ("replicasets",), ("list", "watch", "create", "update", "patch", "delete")),
        PolicyRule(("",), ("pods",), ("list", "watch")),
    )
    # Same unselected watches as the ReplicaSet controller: one informer each for the whole process.
    watches: ClassVar[tuple[Watch, ...]] = (
        WatchesWith(DEPLOYMENTS, DeploymentEvents, inline=True),
        WatchesWith(REPLICASETS, ReplicaSetEvents, inline=True),
        WatchesWith(PODS, PodEvents, inline=True),
    )

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self._selectors = SelectorCache(self.log, "deployment")
        self.rs_writes = WriteMemo()
        self.d_writes = WriteMemo()

    def on_new_history(self) -> None:
        # Our writes' resourceVersions no longer compare with the new history's.
        self.rs_writes.clear()
        self.d_writes.clear()
        super().on_new_history()

    def setup(self) -> None:
        super().setup()
        ensure_indexer(self.pods.indexer, CONTROLLER_UID_INDEX, controller_uid_index)
        ensure_indexer(self.replicasets.indexer, CONTROLLER_UID_INDEX, controller_uid_index)

    @cached_property
    def pods(self) -> SharedInformer:
        return self.informer(PODS)

    @cached_property
    def replicasets(self) -> SharedInformer:
        return self.informer(REPLICASETS)

    @cached_property
    def deployments(self) -> SharedInformer:
        return self.informer(DEPLOYMENTS)

    # ------------------------------------------------------------------ cache helpers
    def selector_of(self, d: Mapping[str, Any]) -> Selector | None:
        """The compiled spec.selector (cached per UID); None when invalid."""
        return self._selectors.of(d)

    def resolve_controller_ref(self, namespace: str, ref: Mapping[str, Any]) -> Obj | None:
        if ref.get("kind") != DEPLOYMENTS.kind or ref.get("apiVersion", "").split("/")[0] != "apps":
            return None
        d: Obj | None = self.deployments.indexer.get(namespace, str(ref.get("name", "")))
        if d is None or meta(d).get("uid") != ref.get("uid"):
            return None
        return d

    def deployments_selecting(self, rs: Mapping[str, Any]) -> list[Obj]:
        namespace = str(meta(rs).get("namespace") or "")
        return self._selectors.selecting(self.deployments.indexer.by_namespace(namespace), labels_of(rs))

    def deployment_of_pod(self, pod: Mapping[str, Any]) -> Obj | None:
        ref = controller_owner(dict(pod))
        if ref is None or ref.get("kind") != REPLICASETS.kind:
            return None
        ns = str(meta(pod).get("namespace") or "")
        rs: Obj | None = self.replicasets.indexer.get(ns, str(ref.get("name", "")))
        if rs is None or meta(rs).get("uid") != ref.get("uid"):
            return None
        owner = controller_owner(rs)
        return self.resolve_controller_ref(ns, owner) if owner is not None else None

    def owned_replicasets(self, d: Mapping[str, Any]) -> list[Obj]:
        found: list[Obj] = self.replicasets.indexer.by_index(
            CONTROLLER_UID_INDEX, str(meta(d).get("uid") or "")
        )
        return found

    def pods_of(self, d: Mapping[str, Any], rs: Mapping[str, Any]) -> list[Obj]:
        """Pods the ReplicaSet controls that the Deployment selects (getPodMapForDeployment)."""
        selector = self.selector_of(d)
        pods: list[Obj] = self.pods.indexer.by_index(CONTROLLER_UID_INDEX, str(meta(rs).get("uid") or ""))
        return [p for p in pods if selector is not None and selector.matches(labels_of(p))]

    def pod_count(self, d: Mapping[str, Any]) -> int:
        return sum(len(self.pods_of(d, rs)) for rs in self.owned_replicasets(d))

    # ------------------------------------------------------------------ our writes, until the cache has them
    def written_replicaset(self, written: Obj) -> None:
        self.rs_writes.written(written)

    def written_deployment(self, written: Obj) -> None:
        self.d_writes.written(written)

    def forget_replicaset(self, uid: str) -> None:
        self.rs_writes.forget(uid)

    def forget_deployment(self, uid: str) -> None:
        self.d_writes.forget(uid)
        self._selectors.forget(uid)

    # ------------------------------------------------------------------ reconcile
    async def reconcile(self, request: Request) -> Result | None:
        try:
            return await self.sync_deployment(request)
        except ApiError as exc:
            if exc.has_cause("NamespaceTerminating"):
                return None  # every later create fails too: nothing to do, no retry
            self._give_up_after_retries(request, exc)
            raise
        except Exception as exc:
            self._give_up_after_retries(request, exc)
            raise

    def _give_up_after_retries(self, request: Request, exc: Exception) -> None:
        if self.queue.num_requeues(request) >= MAX_RETRIES:
            raise TerminalError(f"dropping deployment {request.key} out of the queue: {exc}") from exc

    async def sync_deployment(self, request: Request) -> Result | None:
        cached: Obj | None = self.deployments.indexer.get_by_key(request.key)
        if cached is None:
            return None
        d = deep_copy(self.d_writes.fresh(cached))
        selector = self.selector_of(d)
        if selector is None:
            return None  # an invalid selector cannot become valid (immutable)
        rollout = Rollout(self, d, await self.claim_replicasets(request, d, selector))
        if selector.empty:
            rollout.event(
                "Warning",
                "SelectingAll",
                "This deployment is selecting all pods. A non-empty selector is required.",
            )
            if int(rollout.status.get("observedGeneration") or 0) < int(d["metadata"].get("generation") or 0):
                rollout.status["observedGeneration"] = d["metadata"]["generation"]
                await rollout.update_status()
            return None
        if d["metadata"].get("deletionTimestamp"):
            new_rs, old = await rollout.all_replicasets(create=False)
            await rollout.sync_deployment_status([*old, new_rs] if new_rs is not None else old, new_rs)
            return None
        if check_paused_conditions(rollout.d, rollout.now):
            await rollout.update_status()
        d = rollout.d
        kind = strategy_type(d)
        if d["spec"].get("paused"):
            await sync_scaling(rollout, rollback_to(d) is not None)
        elif rollback_to(d) is not None:
            await rollback(rollout)
        elif await is_scaling_event(rollout):
            await sync_scaling(rollout, False)
        elif kind == RECREATE:
            await rollout_recreate(rollout)
        elif kind == ROLLING_UPDATE:
            await rollout_rolling(rollout)
        else:
            raise TerminalError(f"unexpected deployment strategy type: {kind}")
        return self._requeue(rollout)

    def _requeue(self, rollout: Rollout) -> Result | None:
        if rollout.requeue_after is None:
            return None
        if rollout.requeue_after == 0.0:
            return Result(requeue=True)  # the deadline is less than a second away: rate limited
        return Result(requeue_after=rollout.requeue_after)

    async def claim_replicasets(self, request: Request, d: Obj, selector: Selector) -> list[Obj]:
        """ReplicaSets the Deployment owns after adopting matching orphans and releasing owned ones that no
        longer match (ClaimReplicaSets); our own writes stand in for stale cached objects."""
        namespace = request.namespace
        index = self.replicasets.indexer
        cached = self.owned_replicasets(d)
        owned = [self.rs_writes.fresh(rs) for rs in cached]
        owned += self.rs_writes.pending(str(meta(d).get("uid")), {str(meta(rs).get("uid")) for rs in cached})
        orphans: list[Obj] = index.by_index(CONTROLLER_UID_INDEX, orphan_index_key(namespace))
        claimed = [rs for rs in owned if selector.matches(labels_of(rs))]
        undecided = [rs for rs in owned if not selector.matches(labels_of(rs))]
        undecided += [rs for rs in orphans if selector.matches(labels_of(rs))]
        if undecided:
            manager = ControllerRefManager(
                owner=d,
                api_version=DEPLOYMENTS.api_version,
                kind=DEPLOYMENTS.kind,
                selector=selector,
                patch_pod=self._patch_replicaset,
                recheck_owner=lambda: self.client.get(DEPLOYMENTS, request.name, namespace),
                dependent_kind=REPLICASETS.kind,
            )
            claimed += await manager.claim_pods(undecided)
        return claimed

    async def _patch_replicaset(self, namespace: str, name: str, body: Obj) -> object:
        return await self.client.patch(REPLICASETS, name, body, namespace, patch_type="strategic")
