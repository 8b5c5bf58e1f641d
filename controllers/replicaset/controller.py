"""The ReplicaSet controller: keep `spec.replicas` pods of the template alive (upstream:
pkg/controller/replicaset/replica_set.go).

One reconcile = syncReplicaSet: read the ReplicaSet and its pods from the shared caches, claim pods
(adopt/release), create or delete pods when the expectations of the previous sync are met and the
ReplicaSet is not being deleted, then write the status when it changed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from functools import cached_property
from typing import Any, ClassVar

from pydantic import Field

from controllers.common.claims import ControllerRefManager
from controllers.common.podutil import (
    Obj,
    Selector,
    ensure_indexer,
    is_terminating,
    labels_of,
    meta,
)
from controllers.common.selectors import SelectorCache
from controllers.replicaset.handlers import PodEvents, ReplicaSetEvents
from controllers.replicaset.manage import manage_replicas
from controllers.replicaset.podfacts import PodFacts, PodFactsCache, count_replicas
from controllers.replicaset.status import (
    calculate_status,
    desired_replicas,
    status_unchanged,
    with_status,
)
from manager import (
    CONTROLLER_UID_INDEX,
    PODS,
    REPLICASETS,
    ApiError,
    Controller,
    ControllerContext,
    ControllerExpectations,
    ControllerFlags,
    PolicyRule,
    Request,
    Result,
    SharedInformer,
    Watch,
    WatchesWith,
    controller_uid_index,
    orphan_index_key,
)

STATUS_UPDATE_RETRIES = 1


def _replicaset_events(ctl: Controller) -> ReplicaSetEvents:
    assert isinstance(ctl, ReplicaSetController)
    return ReplicaSetEvents(ctl)


def _pod_events(ctl: Controller) -> PodEvents:
    assert isinstance(ctl, ReplicaSetController)
    return PodEvents(ctl)


class ReplicaSetFlags(ControllerFlags):
    """replicaset-controller's flags (kube-controller-manager's ReplicaSetControllerOptions)."""

    concurrent_replicaset_syncs: int = Field(
        5, gt=0, description="ReplicaSets synced concurrently (workers of replicaset-controller)."
    )


class ReplicaSetController(Controller):
    name = "replicaset-controller"
    aliases = ("replicaset",)
    enabled_by_default = True
    flags = ReplicaSetFlags
    concurrency = "concurrent_replicaset_syncs"
    queue_name = "replicaset"
    # Each verb is a call it makes (the event sender's rules are the manager's, not repeated here).
    rbac = (
        PolicyRule(("apps",), ("replicasets",), ("get", "list", "watch")),
        PolicyRule(("apps",), ("replicasets/status",), ("update",)),
        PolicyRule(("apps",), ("replicasets/finalizers",), ("update",)),  # blockOwnerDeletion on its Pods
        PolicyRule(("",), ("pods",), ("list", "watch", "create", "delete", "patch")),  # patch: adopt, release
    )
    # The handlers only read caches, settle expectations and enqueue: inline.
    watches: ClassVar[tuple[Watch, ...]] = (
        WatchesWith(REPLICASETS, _replicaset_events, inline=True),
        WatchesWith(PODS, _pod_events, inline=True),
    )

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.expectations = ControllerExpectations()
        self.now: Callable[[], float] = time.time  # wall clock for availability; tests may replace it
        self._selectors = SelectorCache(self.log, "replicaset")
        self.pod_facts = PodFactsCache()
        self._last_write: dict[str, tuple[Obj, Obj]] = {}  # key → (cached object replaced, our write)

    # ------------------------------------------------------------------ wiring
    def on_new_history(self) -> None:
        # Pods we expected to see created or deleted may never show up in the new history.
        self.expectations.clear()
        super().on_new_history()

    def setup(self) -> None:
        super().setup()
        ensure_indexer(self.pods.indexer, CONTROLLER_UID_INDEX, controller_uid_index)
        ensure_indexer(self.replicasets.indexer, CONTROLLER_UID_INDEX, controller_uid_index)

    @cached_property
    def pods(self) -> SharedInformer:
        """The shared pod informer (looked up once: handlers ask for it on every event)."""
        return self.informer(PODS)

    @cached_property
    def replicasets(self) -> SharedInformer:
        return self.informer(REPLICASETS)

    def selector_of(self, rs: Mapping[str, Any]) -> Selector | None:
        """The compiled spec.selector (cached per UID); None when invalid."""
        return self._selectors.of(rs)

    def forget_replicaset(self, key: str, uid: str) -> None:
        """A ReplicaSet was deleted: a new one with the same name starts with clean expectations."""
        self.expectations.delete(key)
        self._selectors.forget(uid)
        self.pod_facts.forget(key)
        self._last_write.pop(key, None)

    @cached_property
    def _replicaset_by_key(self) -> Callable[[str], Obj | None]:
        return self.replicasets.indexer.get_by_key

    def resolve_controller_ref(self, namespace: str, ref: Mapping[str, Any]) -> Obj | None:
        """The cached ReplicaSet a controller reference points to (kind, name and UID must match).
        Runs for every pod event of the cluster: the cache key built here, one lookup."""
        if ref.get("kind") != "ReplicaSet":
            return None
        name = str(ref.get("name", ""))
        rs = self._replicaset_by_key(f"{namespace}/{name}" if namespace else name)
        if rs is None or (rs.get("metadata") or {}).get("uid") != ref.get("uid"):
            return None
        return rs

    def replicasets_selecting(self, pod: Mapping[str, Any]) -> list[Obj]:
        """ReplicaSets of the pod's namespace whose (non-empty) selector matches its labels."""
        labels = labels_of(pod)
        if not labels:
            return []
        namespace = str(meta(pod).get("namespace") or "")
        return self._selectors.selecting(self.replicasets.indexer.by_namespace(namespace), labels)

    # ------------------------------------------------------------------ reconcile
    async def reconcile(self, request: Request) -> Result | None:
        key = request.key
        rs: Obj | None = self.replicasets.indexer.get_by_key(key)
        if rs is None:
            self.expectations.delete(key)
            self.pod_facts.forget(key)
            self._last_write.pop(key, None)
            return None
        needs_sync = self.expectations.satisfied(key)
        selector = self.selector_of(rs)
        if selector is None:
            return None  # nothing sensible to do until the object changes

        pods, facts = await self.claim(request, rs, selector)

        manage_error: Exception | None = None
        if needs_sync and not is_terminating(rs):
            try:
                await self.manage_replicas(pods, rs, key)
            except Exception as exc:
                manage_error = exc

        base = self.freshest(key, rs)
        min_ready = int((rs.get("spec") or {}).get("minReadySeconds") or 0)
        counts = count_replicas(facts, min_ready, self.now())
        new_status = calculate_status(base, len(pods), counts, manage_error, self.now())
        updated = await self.update_status(key, rs, base, new_status)
        if manage_error is not None:
            raise manage_error
        spec = updated.get("spec") or {}
        min_ready = int(spec.get("minReadySeconds") or 0)
        status = updated.get("status") or {}
        replicas = desired_replicas(updated)
        if (
            min_ready > 0
            and int(status.get("readyReplicas") or 0) == replicas
            and int(status.get("availableReplicas") or 0) != replicas
        ):
            return Result(requeue_after=float(min_ready))
        return None

    async def claim(self, request: Request, rs: Obj, selector: Selector) -> tuple[list[Obj], list[PodFacts]]:
        """The active pods this ReplicaSet owns after adopting and releasing, with their facts.

        Pods already controlled by it and still matching are claimed without further ado; the others
        (orphans, pods that stopped matching) go through the controller-ref manager."""
        uid = meta(rs).get("uid")
        claimed: list[PodFacts] = []
        undecided: list[Obj] = []
        by_pod: dict[int, PodFacts] = {}
        for f in self.pod_facts.facts(request.key, rs, selector, self.pods_for(rs)):
            if not f.active:
                continue
            if f.controller_uid == uid and f.matches:
                claimed.append(f)
            elif f.controller_uid is None or f.controller_uid == uid:
                undecided.append(f.pod)
                by_pod[id(f.pod)] = f
        if undecided:
            claimer = ControllerRefManager(
                owner=rs,
                api_version=REPLICASETS.api_version,
                kind=REPLICASETS.kind,
                selector=selector,
                patch_pod=self._patch_pod,
                recheck_owner=lambda: self.client.get(REPLICASETS, request.name, request.namespace),
            )
            # ClaimError propagates: the sync is retried with backoff, as upstream.
            claimed.extend(by_pod[id(p)] for p in await claimer.claim_pods(undecided))
        return [f.pod for f in claimed], claimed

    def pods_for(self, rs: Mapping[str, Any]) -> list[Obj]:
        """Pods controlled by the ReplicaSet, then the orphans of its namespace (owned first matters when
        deleting everything: that path does not sort)."""
        index = self.pods.indexer
        m = meta(rs)
        owned: list[Obj] = index.by_index(CONTROLLER_UID_INDEX, str(m.get("uid") or ""))
        orphan_key = orphan_index_key(str(m.get("namespace")))
        orphans: list[Obj] = index.by_index(CONTROLLER_UID_INDEX, orphan_key)
        return owned + orphans if orphans else owned

    async def _patch_pod(self, namespace: str, name: str, body: Obj) -> object:
        return await self.client.patch(PODS, name, body, namespace, patch_type="strategic")

    # ------------------------------------------------------------------ manageReplicas
    async def manage_replicas(self, pods: list[Obj], rs: Obj, key: str) -> None:
        await manage_replicas(self, pods, rs, key)

    # ------------------------------------------------------------------ status
    def freshest(self, key: str, rs: Obj) -> Obj:
        """The ReplicaSet to base the status on: our own last write when the cache still holds the very
        object that write replaced (the cache has not caught up with it yet), else the cached one."""
        last = self._last_write.get(key)
        if last is not None and last[0] is rs:
            return last[1]
        self._last_write.pop(key, None)
        return rs

    async def update_status(self, key: str, rs: Obj, base: Obj, new_status: Obj) -> Obj:
        """Write the status subresource unless nothing changed; one retry on a fresh read after a failure."""
        if status_unchanged(base, new_status):
            return base
        current = base
        attempt = 0
        while True:
            try:
                updated: Obj = await self.client.update_status(REPLICASETS, with_status(current, new_status))
                self._last_write[key] = (rs, updated)
                return updated
            except ApiError as exc:
                if attempt >= STATUS_UPDATE_RETRIES:
                    raise
                attempt += 1
                self.log.debug("status update failed, retrying on a fresh copy", error=str(exc))
                m = meta(rs)
                current = await self.client.get(REPLICASETS, str(m["name"]), str(m.get("namespace")))
