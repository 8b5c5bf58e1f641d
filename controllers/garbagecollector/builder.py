"""The graph builder: applies the monitors' events to the graph, one at a time, and enqueues what the
workers must look at (upstream: pkg/controller/garbagecollector/graph_builder.go `processGraphChanges`).

Every monitor handler turns an informer notification into a `GraphEvent` on the
`garbage_collector_graph_changes` queue; one task consumes it. Events are distinct objects (identity hash),
so the queue never merges two of them: each add, update and delete is applied, in order.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

import structlog

from controllers.garbagecollector.events import (
    DELETE,
    GraphEvent,
    being_deleted,
    deletion_starts_with,
)
from controllers.garbagecollector.graph import (
    FOREGROUND,
    ORPHAN,
    Node,
    ObjectReference,
    OwnerRef,
    ReferenceCache,
    has_finalizer,
    owner_refs,
)
from controllers.garbagecollector.identities import (
    alternate_owner_identity,
    partition_dependents,
    references_diffs,
)
from manager import Queue, QueueShutDown, RateLimitingQueue

log = structlog.get_logger(__name__)

_YIELD_EVERY = 1000  # events applied between two yields to the loop (a 100k-object initial list)
EventSink = Callable[[dict[str, Any], str, str, str], None]  # (involved object, type, reason, message)


class GraphBuilder:
    """Owns `uid_to_node` and the absent-owner cache; feeds the two attempt queues."""

    def __init__(
        self,
        attempt_to_delete: RateLimitingQueue[Node],
        attempt_to_orphan: RateLimitingQueue[Node],
        events: EventSink,
    ) -> None:
        self.uid_to_node: dict[str, Node] = {}
        self.absent_owner_cache = ReferenceCache(500)
        self.graph_changes: Queue[GraphEvent] = Queue("garbage_collector_graph_changes")
        self.attempt_to_delete = attempt_to_delete
        self.attempt_to_orphan = attempt_to_orphan
        self.events = events
        self.processed = 0  # events applied (tests and /debug)

    # ------------------------------------------------------------------ the consumer
    def push(self, event: GraphEvent) -> None:
        self.graph_changes.add(event)

    def enqueue_virtual_delete(self, identity: ObjectReference) -> None:
        """A worker found that `identity` does not exist: remove it from the graph through the same queue as
        the informers' events (upstream `enqueueVirtualDeleteEvent`)."""
        obj = {"metadata": {"namespace": identity.namespace, "name": identity.name, "uid": identity.uid}}
        self.push(GraphEvent(DELETE, obj, identity.api_version, identity.kind, virtual=True))

    async def run(self) -> None:
        """Apply events until the queue shuts down (`runProcessGraphChanges`)."""
        queue = self.graph_changes
        budget = _YIELD_EVERY
        while True:
            try:
                event: GraphEvent | None = await queue.get()
            except QueueShutDown:
                return
            while event is not None:  # whatever is already queued, without a wake-up per event
                try:
                    self.process(event)
                except Exception:  # one unreadable event must not stop the graph for everything else
                    log.exception("cannot apply graph event", kind=event.kind, virtual=event.virtual)
                finally:
                    queue.done(event)
                self.processed += 1
                budget -= 1
                if not budget:
                    budget = _YIELD_EVERY
                    await asyncio.sleep(0)
                event = queue.get_nowait()

    def is_idle(self) -> bool:
        return len(self.graph_changes) == 0 and not self.graph_changes.processing

    # ------------------------------------------------------------------ processGraphChanges
    def process(self, event: GraphEvent) -> None:
        meta = event.obj.get("metadata")
        if not isinstance(meta, Mapping) or not meta.get("uid"):
            log.warning("graph event without metadata.uid ignored", kind=event.kind)
            return
        uid: str = meta["uid"]
        nodes = self.uid_to_node
        existing = nodes.get(uid)
        if existing is not None and not event.virtual and existing.virtual:
            existing = self._observe(existing, self._identity(event, meta))
        if event.type != DELETE:
            if existing is None:
                node = Node(
                    self._identity(event, meta),
                    owner_refs(meta),
                    being_deleted=being_deleted(meta),
                    deleting_dependents=being_deleted(meta) and has_finalizer(meta, FOREGROUND),
                )
                nodes[uid] = node
                self.add_dependent_to_owners(node, node.owners)
                self.process_transitions(event.old, meta, node)  # an add may already be a deletion
            else:
                self._update(existing, event, meta)
        elif existing is None:
            log.debug("deleted item not in the graph", uid=uid, kind=event.kind, virtual=event.virtual)
        else:
            self._delete(existing, event, meta)

    def _identity(self, event: GraphEvent, meta: Mapping[str, Any]) -> ObjectReference:
        return ObjectReference(
            event.api_version, event.kind, meta.get("name") or "", meta["uid"], meta.get("namespace") or ""
        )

    def _observe(self, virtual: Node, observed: ObjectReference) -> Node:
        """A real event for a virtual node: it exists. Dependents naming it otherwise are checked again."""
        if observed != virtual.identity:
            _, invalid = partition_dependents(virtual.dependents_list(), observed)
            for dep in invalid:
                if observed.namespace and dep.namespace != observed.namespace:
                    log.info(
                        "item references an owner in another namespace",
                        item=str(dep.identity),
                        owner=str(observed),
                    )
                    self.report_invalid_namespace_owner_ref(dep, observed.uid)
                self.attempt_to_delete.add(dep)
            log.debug("virtual item observed", virtual=str(virtual.identity), observed=str(observed))
            replacement = virtual.clone()
            replacement.set_identity(observed)
            self.uid_to_node[observed.uid] = replacement
            virtual = replacement
        virtual.virtual = False
        return virtual

    def _update(self, node: Node, event: GraphEvent, meta: Mapping[str, Any]) -> None:
        if not event.virtual and (node.api_version != event.api_version or node.kind != event.kind):
            # Seen through another version or kind name than first recorded: the same node, re-labelled (no
            # clone needed: a worker re-reads apiVersion/kind from the graph before it acts).
            node.api_version, node.kind = event.api_version, event.kind
        new_owners = owner_refs(meta)
        old_owners = node.owners
        if new_owners is not old_owners:
            added, removed, changed = references_diffs(old_owners, new_owners)
            node.owners = new_owners  # always: share the new object's list, let the old one be freed
            if added or removed or changed:
                self._enqueue_unblocked_owners(removed, changed)
                self.add_dependent_to_owners(node, added)
                self._remove_dependent_from_owners(node, removed)
        if being_deleted(meta):
            node.being_deleted = True
        self.process_transitions(event.old, meta, node)

    def _delete(self, node: Node, event: GraphEvent, meta: Mapping[str, Any]) -> None:
        nodes = self.uid_to_node
        if event.virtual:
            deleted = self._identity(event, meta)
            if node.virtual:
                matching, nonmatching = partition_dependents(node.dependents_list(), deleted)
                if nonmatching:
                    # Dependents disagree on this owner's coordinates: only the verified identity is absent.
                    if matching:
                        self.absent_owner_cache.add(deleted)
                        for dep in matching:
                            self.attempt_to_delete.add(dep)
                    if node.identity == deleted:
                        alternate = alternate_owner_identity(nonmatching, deleted)
                        if alternate is not None:
                            replacement = node.clone()
                            replacement.set_identity(alternate)
                            nodes[alternate.uid] = replacement
                            self.attempt_to_delete.add_rate_limited(replacement)
                    return
            elif node.identity != deleted:
                # A virtual delete never removes an observed node whose coordinates differ.
                matching, _ = partition_dependents(node.dependents_list(), deleted)
                if matching:
                    self.absent_owner_cache.add(deleted)
                    for dep in matching:
                        self.attempt_to_delete.add(dep)
                return
        del nodes[node.uid]
        self._remove_dependent_from_owners(node, node.owners)
        dependents = node.dependents_list()
        if dependents:
            self.absent_owner_cache.add(self._identity(event, meta))
        for dep in dependents:
            self.attempt_to_delete.add(dep)
        for ref in node.owners:
            owner = nodes.get(ref["uid"])
            if owner is not None and owner.deleting_dependents:
                self.attempt_to_delete.add(owner)  # perhaps its last blocking dependent just went

    # ------------------------------------------------------------------ links
    def add_dependent_to_owners(self, node: Node, owners: list[OwnerRef] | Any) -> None:
        """Link `node` under each owner, creating virtual owners that will be checked against the API
        (`addDependentToOwners`); a reference that disagrees with an observed owner gets the dependent
        checked too."""
        nodes = self.uid_to_node
        suspicious = False
        for ref in owners:
            owner = nodes.get(ref["uid"])
            if owner is None:
                owner = Node(
                    ObjectReference(ref["apiVersion"], ref["kind"], ref["name"], ref["uid"], node.namespace),
                    virtual=True,
                )
                nodes[owner.uid] = owner
                owner.add_dependent(node)
                self.attempt_to_delete.add(owner)  # does it exist? a worker asks the API server
                continue
            owner.add_dependent(node)
            if suspicious:
                continue
            namespaced = bool(owner.namespace)
            if namespaced and owner.namespace != node.namespace:
                if not owner.virtual:
                    log.info(
                        "item references an owner in another namespace",
                        item=str(node.identity),
                        owner=str(owner.identity),
                    )
                    self.report_invalid_namespace_owner_ref(node, owner.uid)
                suspicious = True
            elif not (
                ref["name"] == owner.name
                and ref["kind"] == owner.kind
                and ref["apiVersion"] == owner.api_version
            ):
                if not owner.virtual:
                    log.info(
                        "item's owner reference does not match the observed owner",
                        item=str(node.identity),
                        owner=str(owner.identity),
                    )
                suspicious = True
            elif not namespaced and owner.namespace != node.namespace and owner.virtual:
                # A virtual cluster-scoped owner named from a namespace: maybe a namespaced kind referenced by
                # a cluster-scoped dependent; let a worker check.
                suspicious = True
        if suspicious:
            self.attempt_to_delete.add(node)

    def _remove_dependent_from_owners(self, node: Node, owners: Any) -> None:
        nodes = self.uid_to_node
        for ref in owners:
            owner = nodes.get(ref["uid"])
            if owner is not None:
                owner.delete_dependent(node)

    def _enqueue_unblocked_owners(
        self, removed: list[OwnerRef], changed: list[tuple[OwnerRef, OwnerRef]]
    ) -> None:
        """A blocking reference removed or flipped to non-blocking may let a foreground deletion finish
        (`addUnblockedOwnersToDeleteQueue`)."""
        nodes = self.uid_to_node
        for ref in removed:
            if ref.get("blockOwnerDeletion") is True and (owner := nodes.get(ref["uid"])) is not None:
                self.attempt_to_delete.add(owner)
        for old, new in changed:
            unblocked = old.get("blockOwnerDeletion") is True and new.get("blockOwnerDeletion") is not True
            if unblocked and (owner := nodes.get(new["uid"])) is not None:
                self.attempt_to_delete.add(owner)

    def process_transitions(self, old: Mapping[str, Any] | None, meta: Mapping[str, Any], node: Node) -> None:
        """A deletion that starts now with `orphan` or `foregroundDeletion` (`processTransitions`)."""
        if deletion_starts_with(old, meta, ORPHAN):
            log.debug("add item to attemptToOrphan", item=str(node.identity))
            self.attempt_to_orphan.add(node)
            return
        if deletion_starts_with(old, meta, FOREGROUND):
            log.debug("item waits for its dependents to be deleted", item=str(node.identity))
            node.deleting_dependents = True  # a node first seen as virtual lacks it
            for dep in node.dependents_list():
                self.attempt_to_delete.add(dep)
            self.attempt_to_delete.add(node)

    def report_invalid_namespace_owner_ref(self, node: Node, owner_uid: str) -> None:
        """Warning `OwnerRefInvalidNamespace` on the dependent (`reportInvalidNamespaceOwnerRef`)."""
        ref = next((r for r in node.owners if r["uid"] == owner_uid), None)
        if ref is None:
            return
        invalid = ObjectReference(ref["apiVersion"], ref["kind"], ref["name"], ref["uid"], node.namespace)
        involved = {
            "apiVersion": node.api_version,
            "kind": node.kind,
            "metadata": {"namespace": node.namespace, "name": node.name, "uid": node.uid},
        }
        message = f'ownerRef {invalid} does not exist in namespace "{node.namespace}"'
        self.events(involved, "Warning", "OwnerRefInvalidNamespace", message)
