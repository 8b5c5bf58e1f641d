"""processGraphChanges, event by event, without an API server: what the graph becomes and what gets queued
for the workers."""

from __future__ import annotations

import asyncio
from typing import Any

from controllers.garbagecollector.builder import GraphBuilder
from controllers.garbagecollector.events import ADD, DELETE, UPDATE, GraphEvent
from controllers.garbagecollector.graph import Node, ObjectReference
from controllers.garbagecollector.monitors import MonitorHandler
from manager import DeletedFinalStateUnknown, GroupVersionResource, RateLimitingQueue

TS = "2026-01-01T00:00:00Z"


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[dict[str, Any], str, str, str]] = []

    def __call__(self, obj: dict[str, Any], type: str, reason: str, message: str) -> None:
        self.events.append((obj, type, reason, message))


def make() -> tuple[GraphBuilder, Recorder]:
    recorder = Recorder()
    builder = GraphBuilder(RateLimitingQueue(), RateLimitingQueue(), recorder)
    return builder, recorder


def obj(
    uid: str,
    name: str | None = None,
    namespace: str = "ns",
    owners: list[dict[str, Any]] | None = None,
    deleting: bool = False,
    finalizers: list[str] | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"uid": uid, "name": name or uid, "namespace": namespace}
    if owners is not None:
        meta["ownerReferences"] = owners
    if deleting:
        meta["deletionTimestamp"] = TS
    if finalizers:
        meta["finalizers"] = finalizers
    return {"metadata": meta}


def ref(
    uid: str, name: str | None = None, kind: str = "ConfigMap", block: bool | None = None
) -> dict[str, Any]:
    reference: dict[str, Any] = {"apiVersion": "v1", "kind": kind, "name": name or uid, "uid": uid}
    if block is not None:
        reference["blockOwnerDeletion"] = block
    return reference


def add(builder: GraphBuilder, o: dict[str, Any], kind: str = "ConfigMap") -> None:
    builder.process(GraphEvent(ADD, o, "v1", kind))


def update(builder: GraphBuilder, old: dict[str, Any], new: dict[str, Any], kind: str = "ConfigMap") -> None:
    builder.process(GraphEvent(UPDATE, new, "v1", kind, old=old))


def delete(builder: GraphBuilder, o: dict[str, Any], kind: str = "ConfigMap") -> None:
    builder.process(GraphEvent(DELETE, o, "v1", kind))


def drain(queue: RateLimitingQueue[Node]) -> list[Node]:
    items = []
    while (item := queue.get_nowait()) is not None:
        items.append(item)
        queue.done(item)
    return items


def test_an_unknown_owner_becomes_a_virtual_node_checked_by_a_worker() -> None:
    builder, _ = make()
    add(builder, obj("d", owners=[ref("o", "owner")]))
    owner = builder.uid_to_node["o"]
    assert owner.virtual and owner.namespace == "ns" and owner.name == "owner"
    assert owner.dependents == {builder.uid_to_node["d"]}
    assert drain(builder.attempt_to_delete) == [owner]


def test_observing_a_virtual_owner_replaces_it_and_rechecks_dependents_that_disagree() -> None:
    builder, recorder = make()
    add(builder, obj("d2", namespace="other", owners=[ref("o", "owner")]))  # the virtual owner: in "other"
    add(builder, obj("d1", owners=[ref("o", "owner")]))
    virtual = builder.uid_to_node["o"]
    assert virtual.namespace == "other"
    assert [n.uid for n in drain(builder.attempt_to_delete)] == ["o", "d1"]  # d1 disagrees: checked
    assert not recorder.events  # nobody knows yet where the owner really is
    add(builder, obj("o", "owner"))  # the real owner, in "ns"
    owner = builder.uid_to_node["o"]
    assert not owner.virtual and owner is not virtual and owner.namespace == "ns"
    assert [n.uid for n in drain(builder.attempt_to_delete)] == ["d2"]
    assert [reason for _, _, reason, _ in recorder.events] == ["OwnerRefInvalidNamespace"]
    assert owner.dependents is not None and {n.uid for n in owner.dependents} == {"d1", "d2"}


def test_an_observed_owner_in_another_namespace_is_reported() -> None:
    builder, recorder = make()
    add(builder, obj("o", "owner"))
    add(builder, obj("d", "dep", namespace="other", owners=[ref("o", "owner")]))
    assert [n.uid for n in drain(builder.attempt_to_delete)] == ["d"]
    (involved, type, reason, message) = recorder.events[0]
    assert (type, reason) == ("Warning", "OwnerRefInvalidNamespace")
    assert (
        message == "ownerRef [v1/ConfigMap, namespace: other, name: owner, uid: o] "
        'does not exist in namespace "other"'
    )
    assert involved == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"namespace": "other", "name": "dep", "uid": "d"},
    }


def test_a_reference_with_other_coordinates_than_the_observed_owner_gets_the_dependent_checked() -> None:
    builder, recorder = make()
    add(builder, obj("o", "owner"))
    add(builder, obj("d", owners=[ref("o", "someone-else")]))
    assert [n.uid for n in drain(builder.attempt_to_delete)] == ["d"]
    assert not recorder.events


def test_removed_or_unblocked_blocking_references_wake_the_owner() -> None:
    builder, _ = make()
    for owner in ("a", "b", "c"):
        add(builder, obj(owner))
    old = obj("d", owners=[ref("a", block=True), ref("b", block=True), ref("c", block=True)])
    add(builder, old)
    drain(builder.attempt_to_delete)
    new = obj("d", owners=[ref("b", block=False), ref("c", block=True)])
    update(builder, old, new)
    assert [n.uid for n in drain(builder.attempt_to_delete)] == ["a", "b"]
    assert builder.uid_to_node["a"].dependents is None
    assert builder.uid_to_node["d"].owners is new["metadata"]["ownerReferences"]


def test_an_unchanged_update_still_shares_the_new_objects_references() -> None:
    builder, _ = make()
    add(builder, obj("o"))
    old = obj("d", owners=[ref("o")])
    add(builder, old)
    drain(builder.attempt_to_delete)
    new = obj("d", owners=[ref("o")])
    update(builder, old, new)
    assert builder.uid_to_node["d"].owners is new["metadata"]["ownerReferences"]
    assert not drain(builder.attempt_to_delete)


def test_orphan_and_foreground_transitions() -> None:
    builder, _ = make()
    add(builder, obj("o"))
    add(builder, obj("d", owners=[ref("o")]))
    drain(builder.attempt_to_delete)
    update(builder, obj("o"), obj("o", deleting=True, finalizers=["orphan"]))
    assert [n.uid for n in drain(builder.attempt_to_orphan)] == ["o"]
    assert builder.uid_to_node["o"].being_deleted

    add(builder, obj("f"))
    add(builder, obj("fd", owners=[ref("f")]))
    drain(builder.attempt_to_delete)
    update(builder, obj("f"), obj("f", deleting=True, finalizers=["foregroundDeletion"]))
    assert builder.uid_to_node["f"].deleting_dependents
    assert [n.uid for n in drain(builder.attempt_to_delete)] == ["fd", "f"]
    # Already known to be waiting: a further update is no new transition.
    update(
        builder,
        obj("f", deleting=True, finalizers=["foregroundDeletion"]),
        obj("f", deleting=True, finalizers=["foregroundDeletion"]),
    )
    assert not drain(builder.attempt_to_delete)


def test_an_object_first_seen_while_deleting_dependents() -> None:
    builder, _ = make()
    add(builder, obj("o", deleting=True, finalizers=["foregroundDeletion"]))
    node = builder.uid_to_node["o"]
    assert node.being_deleted and node.deleting_dependents
    assert drain(builder.attempt_to_delete) == [node]


def test_delete_enqueues_dependents_and_owners_waiting_for_dependents() -> None:
    builder, _ = make()
    add(builder, obj("top", deleting=True, finalizers=["foregroundDeletion"]))
    add(builder, obj("mid", owners=[ref("top", block=True)]))
    add(builder, obj("leaf", owners=[ref("mid")]))
    drain(builder.attempt_to_delete)
    delete(builder, obj("mid", owners=[ref("top", block=True)]))
    assert "mid" not in builder.uid_to_node
    assert {n.uid for n in drain(builder.attempt_to_delete)} == {"leaf", "top"}
    assert builder.absent_owner_cache.has(ObjectReference("v1", "ConfigMap", "mid", "mid", "ns"))
    assert builder.uid_to_node["top"].dependents is None


async def test_a_virtual_delete_never_removes_an_observed_node_with_other_coordinates() -> None:
    builder, _ = make()
    add(builder, obj("o", "real-name"))
    add(builder, obj("d", owners=[ref("o", "wrong-name")]))
    drain(builder.attempt_to_delete)
    builder.enqueue_virtual_delete(ObjectReference("v1", "ConfigMap", "wrong-name", "o", "ns"))
    event = builder.graph_changes.get_nowait()
    assert event is not None
    builder.process(event)
    assert "o" in builder.uid_to_node
    assert [n.uid for n in drain(builder.attempt_to_delete)] == ["d"]
    assert builder.absent_owner_cache.has(ObjectReference("v1", "ConfigMap", "wrong-name", "o", "ns"))


async def test_a_virtual_delete_of_a_disputed_virtual_node_tries_the_next_identity() -> None:
    builder, _ = make()
    add(builder, obj("d1", owners=[ref("o", "a")]))
    add(builder, obj("d2", owners=[ref("o", "b")]))
    drain(builder.attempt_to_delete)
    builder.process(GraphEvent(DELETE, obj("o", "a"), "v1", "ConfigMap", virtual=True))
    replacement = builder.uid_to_node["o"]
    assert replacement.virtual and replacement.name == "b"
    assert [n.uid for n in drain(builder.attempt_to_delete)] == ["d1"]  # the replacement waits its backoff
    assert builder.attempt_to_delete.waiting == 1


async def test_every_event_is_applied_even_when_identical() -> None:
    builder, _ = make()
    same = obj("x")
    builder.push(GraphEvent(ADD, same, "v1", "ConfigMap"))
    builder.push(GraphEvent(DELETE, same, "v1", "ConfigMap"))
    builder.push(GraphEvent(ADD, same, "v1", "ConfigMap"))
    builder.push(GraphEvent(DELETE, same, "v1", "ConfigMap"))
    builder.graph_changes.shut_down()  # the consumer still applies what was queued, then returns
    await asyncio.wait_for(builder.run(), 1.0)
    assert builder.processed == 4 and "x" not in builder.uid_to_node


def test_events_without_metadata_or_uid_are_ignored() -> None:
    builder, _ = make()
    builder.process(GraphEvent(ADD, {}, "v1", "ConfigMap"))
    builder.process(GraphEvent(ADD, {"metadata": {"name": "no-uid"}}, "v1", "ConfigMap"))
    builder.process(GraphEvent(DELETE, obj("never-seen"), "v1", "ConfigMap"))
    assert not builder.uid_to_node


def test_malformed_owner_references_link_nothing() -> None:
    builder, _ = make()
    add(builder, {"metadata": {"uid": "d", "name": "d", "namespace": "ns", "ownerReferences": "junk"}})
    add(
        builder,
        {
            "metadata": {
                "uid": "e",
                "name": "e",
                "namespace": "ns",
                "ownerReferences": [{"kind": "X"}, ref("o")],
            }
        },
    )
    assert builder.uid_to_node["d"].owners == ()
    assert set(builder.uid_to_node) == {"d", "e", "o"}


def test_a_relist_update_across_a_recreation_removes_the_old_node() -> None:
    builder, _ = make()
    handler = MonitorHandler(GroupVersionResource("", "v1", "configmaps", "ConfigMap"), builder.process)
    handler.on_add(obj("first", "same-name"), False)
    handler.on_update(obj("first", "same-name"), obj("second", "same-name"))
    assert set(builder.uid_to_node) == {"second"}
    handler.on_delete(DeletedFinalStateUnknown("ns/same-name", obj("second", "same-name")))
    assert not builder.uid_to_node
