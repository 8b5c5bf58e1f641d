"""Pure helpers of the graph builder about owner identities (upstream: graph_builder.go
`referencesDiffs`, `partitionDependents`, `getAlternateOwnerIdentity`, `referenceLessThan`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from controllers.garbagecollector.graph import (
    Node,
    ObjectReference,
    OwnerRef,
    matches_coordinates,
    reference_of,
)


def references_diffs(
    old: Sequence[OwnerRef], new: Sequence[OwnerRef]
) -> tuple[list[OwnerRef], list[OwnerRef], list[tuple[OwnerRef, OwnerRef]]]:
    """(added, removed, changed) between two ownerReferences lists, matched by uid; `changed` pairs
    (old, new) references with the same uid whose content differs in any field."""
    old_by_uid = {ref["uid"]: ref for ref in old}
    added: list[OwnerRef] = []
    changed: list[tuple[OwnerRef, OwnerRef]] = []
    for ref in new:
        previous = old_by_uid.pop(ref["uid"], None)
        if previous is None:
            added.append(ref)
        elif previous != ref:
            changed.append((previous, ref))
    return added, list(old_by_uid.values()), changed


def partition_dependents(dependents: Iterable[Node], owner: ObjectReference) -> tuple[list[Node], list[Node]]:
    """(matching, nonmatching): dependents whose reference to `owner.uid` matches every coordinate of
    `owner`, and those with one that does not (or that sit in another namespace than a namespaced owner).
    A dependent with several references to that uid may land in both."""
    matching: list[Node] = []
    nonmatching: list[Node] = []
    namespaced = bool(owner.namespace)
    for dep in dependents:
        found_match = found_mismatch = False
        if namespaced and owner.namespace != dep.namespace:
            found_mismatch = True
        else:
            for ref in dep.owners:
                if ref["uid"] == owner.uid:
                    if matches_coordinates(ref, owner):
                        found_match = True
                    else:
                        found_mismatch = True
        if found_match:
            matching.append(dep)
        if found_mismatch:
            nonmatching.append(dep)
    return matching, nonmatching


def reference_less_than(a: ObjectReference, b: ObjectReference) -> bool:
    """Kind, apiVersion, namespace, name, uid: the order alternate identities are tried in."""
    return (a.kind, a.api_version, a.namespace, a.name, a.uid) < (
        b.kind,
        b.api_version,
        b.namespace,
        b.name,
        b.uid,
    )


def alternate_owner_identity(dependents: Iterable[Node], absent: ObjectReference) -> ObjectReference | None:
    """Another identity the dependents give the owner uid `absent.uid` (now verified absent as `absent`): the
    first one after `absent` in `reference_less_than` order, else the first; None when there is none."""
    cluster_scoped = not absent.namespace
    seen = {absent}
    first: ObjectReference | None = None
    first_following: ObjectReference | None = None
    for dep in dependents:
        for ref in dep.owners:
            if ref["uid"] != absent.uid:
                continue
            if matches_coordinates(ref, absent) and (cluster_scoped or absent.namespace == dep.namespace):
                continue  # exactly the identity just verified absent
            candidate = reference_of(ref, dep.namespace)
            if (
                cluster_scoped
                and candidate.api_version == absent.api_version
                and candidate.kind == absent.kind
            ):
                candidate = candidate._replace(namespace="")  # that kind is cluster-scoped: no namespace
            if candidate in seen:
                continue
            seen.add(candidate)
            if first is None or reference_less_than(candidate, first):
                first = candidate
            if reference_less_than(absent, candidate) and (
                first_following is None or reference_less_than(candidate, first_following)
            ):
                first_following = candidate
    return first_following if first_following is not None else first
