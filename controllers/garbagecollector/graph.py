"""The dependency graph's vocabulary (upstream: pkg/controller/garbagecollector/graph.go, uid_cache.go).

A `Node` is one object the monitors saw, or a *virtual* node standing for an owner nobody has observed yet.
Nodes are kept for every object of every monitored resource (the 100k-object budget is about 1 KB each), so:
`__slots__`; identity strings are the cached object's own strings (uid, name, namespace) or the monitor's
(apiVersion, kind), never copies; `owners` is the cached object's own `ownerReferences` list; `dependents`
is None until a first dependent arrives. Only the graph builder writes nodes, on the one event loop, so
nothing here locks.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import structlog

log = structlog.get_logger(__name__)

OwnerRef = Mapping[str, Any]
FOREGROUND = "foregroundDeletion"  # metav1.FinalizerDeleteDependents
ORPHAN = "orphan"  # metav1.FinalizerOrphanDependents
NO_OWNERS: tuple[OwnerRef, ...] = ()  # shared by every object without ownerReferences


class ObjectReference(NamedTuple):
    """An owner reference's coordinates plus a namespace (upstream `objectReference`): the key of the
    absent-owner cache and what logs and events print."""

    api_version: str
    kind: str
    name: str
    uid: str
    namespace: str

    def __str__(self) -> str:  # upstream objectReference.String, used verbatim in the event message
        where = f"namespace: {self.namespace}, name: {self.name}, uid: {self.uid}"
        return f"[{self.api_version}/{self.kind}, {where}]"


def reference_of(ref: OwnerRef, namespace: str) -> ObjectReference:
    """The coordinates of ownerReference `ref`, placed in `namespace` (upstream
    `ownerReferenceCoordinates`)."""
    return ObjectReference(ref["apiVersion"], ref["kind"], ref["name"], ref["uid"], namespace)


def matches_coordinates(ref: OwnerRef, identity: ObjectReference) -> bool:
    """Whether `ref` names `identity` by uid, name, kind and apiVersion
    (`ownerReferenceMatchesCoordinates`)."""
    return bool(
        ref["uid"] == identity.uid
        and ref["name"] == identity.name
        and ref["kind"] == identity.kind
        and ref["apiVersion"] == identity.api_version
    )


def is_blocking(ref: OwnerRef) -> bool:
    return ref.get("blockOwnerDeletion") is True


def _well_formed(ref: Any) -> bool:
    if type(ref) is not dict:
        return False
    uid, kind, name, api_version = ref.get("uid"), ref.get("kind"), ref.get("name"), ref.get("apiVersion")
    return (
        type(uid) is str
        and bool(uid)
        and type(kind) is str
        and bool(kind)
        and type(name) is str
        and bool(name)
        and type(api_version) is str
    )


def owner_refs(meta: Mapping[str, Any]) -> Sequence[OwnerRef]:
    """The object's ownerReferences, shared with the object when they are well formed (the API server
    validates them, so that is the rule). A malformed entry (not a mapping, no uid, kind or name) is left out
    and logged: the garbage collector never acts on a reference it cannot read."""
    refs = meta.get("ownerReferences")
    if not refs:
        return NO_OWNERS
    if type(refs) is list and all(_well_formed(ref) for ref in refs):
        return refs
    if type(refs) is not list:
        log.warning("ownerReferences is not a list; ignored", object=_name(meta), value=repr(refs)[:200])
        return NO_OWNERS
    kept = [ref for ref in refs if _well_formed(ref)]
    log.warning(
        "malformed ownerReferences ignored",
        object=_name(meta),
        ignored=[repr(ref)[:200] for ref in refs if not _well_formed(ref)],
    )
    return kept or NO_OWNERS


def _name(meta: Mapping[str, Any]) -> str:
    namespace, name = meta.get("namespace") or "", meta.get("name") or ""
    return f"{namespace}/{name}" if namespace else str(name)


def has_finalizer(meta: Mapping[str, Any], finalizer: str) -> bool:
    finalizers = meta.get("finalizers")
    return type(finalizers) is list and finalizer in finalizers


class Node:
    """One object (or virtual owner) of the graph (upstream `node`).

    `owners` is the object's ownerReferences (shared with the cached object); `dependents` the nodes whose
    ownerReferences name this node's uid, None while there are none.
    """

    __slots__ = (
        "api_version",
        "being_deleted",
        "deleting_dependents",
        "dependents",
        "kind",
        "name",
        "namespace",
        "owners",
        "uid",
        "virtual",
    )

    def __init__(
        self,
        identity: ObjectReference,
        owners: Sequence[OwnerRef] = NO_OWNERS,
        *,
        virtual: bool = False,
        being_deleted: bool = False,
        deleting_dependents: bool = False,
    ) -> None:
        self.api_version, self.kind, self.name, self.uid, self.namespace = identity
        self.owners = owners
        self.dependents: set[Node] | None = None
        self.virtual = virtual
        self.being_deleted = being_deleted
        self.deleting_dependents = deleting_dependents

    @property
    def identity(self) -> ObjectReference:
        return ObjectReference(self.api_version, self.kind, self.name, self.uid, self.namespace)

    def set_identity(self, identity: ObjectReference) -> None:
        self.api_version, self.kind, self.name, self.uid, self.namespace = identity

    def clone(self) -> Node:
        """A copy with its own dependents set (upstream clones a node before changing its identity, so a
        worker holding the old one keeps a consistent view)."""
        copy = Node(self.identity, self.owners, virtual=self.virtual, being_deleted=self.being_deleted)
        copy.deleting_dependents = self.deleting_dependents
        copy.dependents = set(self.dependents) if self.dependents else None
        return copy

    def add_dependent(self, dependent: Node) -> None:
        if self.dependents is None:
            self.dependents = {dependent}
        else:
            self.dependents.add(dependent)

    def delete_dependent(self, dependent: Node) -> None:
        dependents = self.dependents
        if dependents is not None:
            dependents.discard(dependent)
            if not dependents:
                self.dependents = None

    def replace_dependent(self, old: Node, new: Node) -> None:
        dependents = self.dependents
        if dependents is not None and old in dependents:
            dependents.discard(old)
            dependents.add(new)

    def dependents_list(self) -> list[Node]:
        """A snapshot: the set may change while a worker awaits."""
        return list(self.dependents) if self.dependents else []

    def blocking_dependents(self) -> list[Node]:
        """Dependents whose reference to this node has blockOwnerDeletion=true (upstream
        `blockingDependents`): what a foreground deletion waits for."""
        uid = self.uid
        return [
            dep
            for dep in self.dependents_list()
            for ref in dep.owners
            if ref["uid"] == uid and is_blocking(ref)
        ]

    def __repr__(self) -> str:
        return f"Node{self.identity}" + (" (virtual)" if self.virtual else "")


class ReferenceCache:
    """An LRU set of owner references known to be absent (upstream `ReferenceCache`, 500 entries for the
    garbage collector's `absentOwnerCache`)."""

    def __init__(self, max_size: int = 500) -> None:
        self.max_size = max_size
        self._entries: OrderedDict[ObjectReference, None] = OrderedDict()

    def add(self, reference: ObjectReference) -> None:
        self._entries[reference] = None
        self._entries.move_to_end(reference)
        if len(self._entries) > self.max_size:
            self._entries.popitem(last=False)

    def has(self, reference: ObjectReference) -> bool:
        if reference in self._entries:
            self._entries.move_to_end(reference)  # a hit counts as a use, as in the LRU it mirrors
            return True
        return False

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[ObjectReference]:
        return iter(self._entries)
