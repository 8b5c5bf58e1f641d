"""The workers' decisions (upstream: garbagecollector.go `attemptToDeleteWorker`, `attemptToDeleteItem`,
`isDangling`, `classifyReferences`, `processDeletingDependentsItem`, `attemptToOrphanWorker`,
`orphanDependents`).

Each handler returns whether the item goes back to its queue through the rate limiter (`requeueItem`) or
is forgotten; an exception also requeues it. Nothing here loops on its own: every retry waits out the
queue's per-item backoff (5 ms doubling to 1000 s).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

import structlog

from controllers.garbagecollector.builder import GraphBuilder
from controllers.garbagecollector.graph import (
    FOREGROUND,
    ORPHAN,
    Node,
    ObjectReference,
    OwnerRef,
    has_finalizer,
    owner_refs,
)
from controllers.garbagecollector.operations import (
    Operations,
    Policy,
    delete_owner_refs_strategic_patch,
    unblock_owner_refs_strategic_patch,
)
from controllers.garbagecollector.resources import RestMappingError
from manager import NotFound

log = structlog.get_logger(__name__)
REQUEUE, FORGET = True, False
_LOGGED_DEPENDENTS = 10  # how many blocking dependents a debug line names


class VirtualDeleteEnqueued(Exception):
    """The item does not exist: a virtual delete event was queued for the graph builder."""


class NamespacedOwnerOfClusterScopedObject(Exception):
    """A cluster-scoped object names a namespaced owner: will never resolve, so the item is forgotten."""


class Collector:
    def __init__(self, builder: GraphBuilder, operations: Operations) -> None:
        self.builder = builder
        self.ops = operations
        self.absent = builder.absent_owner_cache

    # ------------------------------------------------------------------ attemptToDelete
    async def attempt_to_delete_worker(self, item: Node) -> bool:
        """One item of `garbage_collector_attempt_to_delete`; True to requeue it rate-limited."""
        graph = self.builder.uid_to_node
        current = graph.get(item.uid)
        if item.virtual:
            if current is None:
                log.debug("item no longer in the graph, skipped", item=str(item.identity))
                return FORGET
            if not current.virtual:
                log.debug("item observed since it was queued as virtual, skipped", item=str(item.identity))
                return FORGET
        if current is not None and (current.api_version, current.kind) != (item.api_version, item.kind):
            item = item.clone()  # the queued node is stale: act on the graph's apiVersion/kind
            item.api_version, item.kind = current.api_version, current.kind
        try:
            await self.attempt_to_delete_item(item)
        except (VirtualDeleteEnqueued, NamespacedOwnerOfClusterScopedObject):
            return FORGET
        except RestMappingError as exc:
            # A custom kind discovery has not listed yet, or a kind that does not exist: both look alike.
            log.error("error syncing item", item=str(item.identity), error=str(exc))
            return REQUEUE
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.error("error syncing item", item=str(item.identity), error=f"{type(exc).__name__}: {exc}")
            return REQUEUE
        if item.virtual:
            # Not observed by an informer yet: keep checking, or a virtual node for an object created and
            # deleted while a watch was down would stay forever.
            log.debug("item not observed through an informer yet", item=str(item.identity))
            return REQUEUE
        return FORGET

    async def attempt_to_delete_item(self, item: Node) -> None:
        log.debug("processing item", item=str(item.identity), virtual=item.virtual)
        if item.being_deleted and not item.deleting_dependents:
            log.debug(
                "item is being deleted; its dependents are handled once it is gone", item=str(item.identity)
            )
            return
        try:
            latest = await self.ops.get_object(item)
        except NotFound:
            self._virtual_delete(item)
        meta: Mapping[str, Any] = latest.get("metadata") or {}
        if meta.get("uid") != item.uid:
            log.debug("uid differs: item not found", item=str(item.identity), live_uid=meta.get("uid"))
            self._virtual_delete(item)
        if item.deleting_dependents:
            await self.process_deleting_dependents_item(item)
            return
        refs = owner_refs(meta)
        if not refs:
            log.debug("item has no owner", item=str(item.identity))
            return
        solid, dangling, waiting = await self.classify_references(item, refs)
        log.debug(
            "classified item's owner references",
            item=str(item.identity),
            solid=_uids(solid),
            dangling=_uids(dangling),
            waiting_for_dependents_deletion=_uids(waiting),
        )
        resource_version = str(meta.get("resourceVersion") or "")
        if solid:
            if not dangling and not waiting:
                return
            # A waiting owner must lose the reference too, or it would wait for this item forever.
            uids = [ref["uid"] for ref in (*dangling, *waiting)]
            log.debug("removing dangling and waiting owner references", item=str(item.identity), owners=uids)
            await self.ops.patch(
                item,
                delete_owner_refs_strategic_patch(item.uid, uids),
                lambda node: self.ops.delete_owner_refs_merge_patch(node, uids),
            )
            return
        if waiting and item.dependents:
            for dep in item.dependents_list():
                if dep.deleting_dependents:
                    # Owner and dependent both wait for dependents: unblock this item's references first so a
                    # cycle cannot wedge them (a coarse check with false positives, as upstream's).
                    log.debug(
                        "unblocking owner references to break a possible cycle", item=str(item.identity)
                    )
                    await self.ops.patch(
                        item,
                        unblock_owner_refs_strategic_patch(item),
                        self.ops.unblock_owner_refs_merge_patch,
                    )
                    break
            log.debug(
                "an owner waits for its dependents: deleting item in the foreground", item=str(item.identity)
            )
            await self._delete(item, resource_version, refs, "Foreground")
            return
        policy: Policy = "Background"
        if has_finalizer(meta, ORPHAN):
            policy = "Orphan"
        elif has_finalizer(meta, FOREGROUND):
            policy = "Foreground"
        log.debug("deleting item", item=str(item.identity), propagation_policy=policy)
        await self._delete(item, resource_version, refs, policy)

    async def _delete(
        self, item: Node, resource_version: str, refs: Sequence[OwnerRef], policy: Policy
    ) -> None:
        try:
            await self.ops.delete_object(item, resource_version, refs, policy)
        except NotFound:
            self._virtual_delete(item)

    def _virtual_delete(self, item: Node) -> NoReturn:
        self.builder.enqueue_virtual_delete(item.identity)
        raise VirtualDeleteEnqueued(str(item.identity))

    async def classify_references(
        self, item: Node, refs: Sequence[OwnerRef]
    ) -> tuple[list[OwnerRef], list[OwnerRef], list[OwnerRef]]:
        """(solid, dangling, waiting for dependents' deletion): a live GET per reference not known absent."""
        solid: list[OwnerRef] = []
        dangling: list[OwnerRef] = []
        waiting: list[OwnerRef] = []
        for ref in refs:
            owner = await self.owner_if_present(ref, item)
            if owner is None:
                dangling.append(ref)
                continue
            meta = owner.get("metadata") or {}
            if meta.get("deletionTimestamp") and has_finalizer(meta, FOREGROUND):
                waiting.append(ref)
            else:
                solid.append(ref)
        return solid, dangling, waiting

    async def owner_if_present(self, ref: OwnerRef, item: Node) -> Mapping[str, Any] | None:
        """The live owner `ref` names, or None when it is dangling: absent, or another object (another uid)
        by that name (upstream `isDangling`)."""
        key = ObjectReference(ref["apiVersion"], ref["kind"], ref["name"], ref["uid"], "")
        if self.absent.has(key):  # a cluster-scoped owner known absent
            log.debug("owner known absent", item=str(item.identity), owner=str(key))
            return None
        key = key._replace(namespace=item.namespace)
        if self.absent.has(key):
            log.debug("owner known absent in the item's namespace", item=str(item.identity), owner=str(key))
            return None
        gvr = self.ops.mapper.resource_for(ref["apiVersion"], ref["kind"])
        if not gvr.namespaced:
            key = key._replace(namespace="")
        elif not item.namespace:
            log.info(
                "cluster-scoped item names a namespaced owner; never collected",
                item=str(item.identity),
                owner=str(key),
            )
            raise NamespacedOwnerOfClusterScopedObject(str(item.identity))
        try:
            owner = await self.ops.client.get(gvr, ref["name"], item.namespace or None, metadata_only=True)
        except NotFound:
            self.absent.add(key)
            log.debug("owner not found", item=str(item.identity), owner=str(key))
            return None
        if (owner.get("metadata") or {}).get("uid") != ref["uid"]:
            self.absent.add(key)
            log.debug("owner by that name has another uid", item=str(item.identity), owner=str(key))
            return None
        return owner

    async def process_deleting_dependents_item(self, item: Node) -> None:
        """A foreground deletion: done once no dependent blocks it, else nudge the blocking dependents."""
        blocking = item.blocking_dependents()
        if not blocking:
            log.debug(
                "no blocking dependents left: removing the foregroundDeletion finalizer",
                item=str(item.identity),
            )
            await self.ops.remove_finalizer(item, FOREGROUND)
            return
        log.debug(
            "owner waits for blocking dependents",
            item=str(item.identity),
            blocking=len(blocking),
            dependents=[
                str(dep.identity) + (" (being deleted)" if dep.being_deleted else "")
                for dep in blocking[:_LOGGED_DEPENDENTS]
            ],
        )
        for dep in blocking:
            if not dep.deleting_dependents:
                self.builder.attempt_to_delete.add(dep)

    # ------------------------------------------------------------------ attemptToOrphan
    async def attempt_to_orphan_worker(self, owner: Node) -> bool:
        """One item of `garbage_collector_attempt_to_orphan`: strip the owner from its dependents in the
        graph, then remove its `orphan` finalizer. True to requeue it rate-limited."""
        try:
            await self.orphan_dependents(owner, owner.dependents_list())
            await self.ops.remove_finalizer(owner, ORPHAN)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.error(
                "orphaning dependents failed", owner=str(owner.identity), error=f"{type(exc).__name__}: {exc}"
            )
            return REQUEUE
        return FORGET

    async def orphan_dependents(self, owner: Node, dependents: list[Node]) -> None:
        async def orphan(dependent: Node) -> None:
            with contextlib.suppress(NotFound):  # already gone: nothing to orphan
                await self.ops.patch(
                    dependent,
                    delete_owner_refs_strategic_patch(dependent.uid, [owner.uid]),
                    lambda node: self.ops.delete_owner_refs_merge_patch(node, [owner.uid]),
                )

        results = await asyncio.gather(*(orphan(dep) for dep in dependents), return_exceptions=True)
        errors = [
            f"orphaning {dep.identity} failed: {r}"
            for dep, r in zip(dependents, results, strict=True)
            if isinstance(r, Exception)
        ]
        for result in results:
            if isinstance(result, BaseException) and not isinstance(result, Exception):
                raise result
        if errors:
            raise RuntimeError(f"failed to orphan dependents of owner {owner.identity}: {'; '.join(errors)}")
        log.debug("updated all dependents", owner=str(owner.identity), dependents=len(dependents))


def _uids(refs: Sequence[OwnerRef]) -> list[str]:
    return [ref["uid"] for ref in refs]
