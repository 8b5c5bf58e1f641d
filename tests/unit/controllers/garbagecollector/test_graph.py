"""The graph's vocabulary: nodes, owner references as read from objects (malformed ones too), identity
helpers and the absent-owner LRU."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from controllers.garbagecollector.graph import (
    NO_OWNERS,
    Node,
    ObjectReference,
    ReferenceCache,
    owner_refs,
)
from controllers.garbagecollector.identities import (
    alternate_owner_identity,
    partition_dependents,
    references_diffs,
)


def ref(
    uid: str, name: str = "o", kind: str = "ConfigMap", api_version: str = "v1", **extra: Any
) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid, **extra}


def node(uid: str, owners: list[dict[str, Any]] | None = None, namespace: str = "ns", name: str = "") -> Node:
    return Node(ObjectReference("v1", "ConfigMap", name or uid, uid, namespace), owners or NO_OWNERS)


def test_owner_references_are_shared_with_the_object_when_well_formed() -> None:
    refs = [ref("u1"), ref("u2", blockOwnerDeletion=True)]
    assert owner_refs({"ownerReferences": refs}) is refs  # no copy per object
    assert owner_refs({}) is NO_OWNERS and owner_refs({"ownerReferences": []}) is NO_OWNERS


@pytest.mark.parametrize(
    "bad",
    [
        "not-a-list",
        {"uid": "u"},
        [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o"}],  # no uid
        [{"apiVersion": "v1", "name": "o", "uid": "u"}],  # no kind
        [{"apiVersion": "v1", "kind": "ConfigMap", "uid": "u"}],  # no name
        [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": 7}],  # not a string
        ["a string"],
        [None],
    ],
)
def test_malformed_owner_references_are_ignored(bad: Any) -> None:
    assert list(owner_refs({"name": "x", "ownerReferences": bad})) == []


def test_malformed_entries_are_dropped_and_the_rest_kept() -> None:
    good = ref("u1")
    assert list(owner_refs({"ownerReferences": [good, {"kind": "X"}]})) == [good]


def test_dependents_start_empty_and_return_to_none() -> None:
    owner, dep = node("o"), node("d", [ref("o")])
    assert owner.dependents is None and owner.dependents_list() == []
    owner.add_dependent(dep)
    assert owner.dependents == {dep}
    owner.delete_dependent(dep)
    assert owner.dependents is None


def test_blocking_dependents_are_those_whose_reference_blocks() -> None:
    owner = node("o")
    blocking = node("b", [ref("o", blockOwnerDeletion=True)])
    free = node("f", [ref("o", blockOwnerDeletion=False)])
    unset = node("n", [ref("o")])
    for dep in (blocking, free, unset):
        owner.add_dependent(dep)
    assert owner.blocking_dependents() == [blocking]


def test_node_clone_copies_the_dependents_set() -> None:
    owner, dep = node("o"), node("d", [ref("o")])
    owner.add_dependent(dep)
    owner.deleting_dependents = True
    copy = owner.clone()
    assert copy.identity == owner.identity and copy.deleting_dependents
    assert copy.dependents == owner.dependents and copy.dependents is not owner.dependents


def test_object_reference_prints_as_upstream() -> None:
    reference = ObjectReference("apps/v1", "ReplicaSet", "web", "u1", "ns")
    assert str(reference) == "[apps/v1/ReplicaSet, namespace: ns, name: web, uid: u1]"


def test_absent_owner_cache_is_an_lru_of_500() -> None:
    cache = ReferenceCache(3)
    refs = [ObjectReference("v1", "ConfigMap", f"n{i}", f"u{i}", "ns") for i in range(4)]
    for reference in refs[:3]:
        cache.add(reference)
    assert cache.has(refs[0])  # a hit makes it the most recent
    cache.add(refs[3])
    assert not cache.has(refs[1]) and cache.has(refs[0]) and cache.has(refs[3]) and len(cache) == 3
    assert ReferenceCache().max_size == 500


def test_references_diffs_by_uid() -> None:
    old = [ref("a"), ref("b", blockOwnerDeletion=True), ref("c")]
    new = [ref("a"), ref("b", blockOwnerDeletion=False), ref("d")]
    added, removed, changed = references_diffs(old, new)
    assert added == [ref("d")] and removed == [ref("c")]
    assert changed == [(ref("b", blockOwnerDeletion=True), ref("b", blockOwnerDeletion=False))]


def test_partition_dependents_by_coordinates_and_namespace() -> None:
    owner = ObjectReference("v1", "ConfigMap", "o", "uo", "ns")
    good = node("g", [ref("uo", name="o")])
    wrong_name = node("w", [ref("uo", name="other")])
    elsewhere = node("e", [ref("uo", name="o")], namespace="other")
    both = node("b", [ref("uo", name="o"), ref("uo", name="x")])
    matching, nonmatching = partition_dependents([good, wrong_name, elsewhere, both], owner)
    assert matching == [good, both] and nonmatching == [wrong_name, elsewhere, both]


def test_alternate_owner_identity_follows_the_absent_one() -> None:
    absent = ObjectReference("v1", "ConfigMap", "b", "u", "ns")
    deps = [node(f"d{n}", [ref("u", name=n)]) for n in ("a", "b", "c", "d")]
    assert alternate_owner_identity(deps, absent) == ObjectReference("v1", "ConfigMap", "c", "u", "ns")
    last = ObjectReference("v1", "ConfigMap", "d", "u", "ns")
    assert alternate_owner_identity(deps, last) == ObjectReference("v1", "ConfigMap", "a", "u", "ns")
    assert alternate_owner_identity(deps[1:2], absent) is None


def test_a_node_stays_small() -> None:
    """Most of the garbage collector's memory is one Node per object: slots, no per-node dict."""
    leaf = node("u", [ref("o")])
    assert not hasattr(leaf, "__dict__")
    assert sys.getsizeof(leaf) <= 112
