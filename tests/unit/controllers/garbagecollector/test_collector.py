"""attemptToDeleteItem and attemptToOrphan, decision by decision, against a scripted in-memory API: which
requests the workers send, with which preconditions and patches, and what is requeued or forgotten."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import pytest

from controllers.garbagecollector.builder import GraphBuilder
from controllers.garbagecollector.collector import FORGET, REQUEUE, Collector
from controllers.garbagecollector.graph import Node, ObjectReference
from controllers.garbagecollector.monitors import Monitors
from controllers.garbagecollector.operations import Operations
from controllers.garbagecollector.resources import RestMapper
from manager import (
    CONFIGMAPS,
    NAMESPACES,
    ApiClient,
    ApiError,
    ApiResource,
    Conflict,
    Discovery,
    GroupVersionResource,
    NotFound,
    RateLimitingQueue,
)

TS = "2026-01-01T00:00:00Z"
WIDGETS = GroupVersionResource("example.com", "v1", "widgets", "Widget")
ALL = frozenset({"get", "list", "watch", "delete", "patch"})
Call = tuple[str, str, Any]  # (verb, name, details)


class FakeApi:
    """get/patch/delete on an in-memory set of objects; `fail[(verb, name)]` scripts errors in order."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.calls: list[Call] = []
        self.fail: dict[tuple[str, str], list[Exception]] = {}

    def put(self, name: str, uid: str, **meta: Any) -> None:
        self.objects[name] = {"metadata": {"name": name, "uid": uid, "resourceVersion": "1", **meta}}

    def _check(self, verb: str, name: str) -> None:
        errors = self.fail.get((verb, name))
        if errors:
            raise errors.pop(0)

    async def get(self, gvr: GroupVersionResource, name: str, namespace: str | None = None, **_: Any) -> Any:
        self.calls.append(("get", name, namespace))
        self._check("get", name)
        if name not in self.objects:
            raise NotFound(404, "NotFound")
        return self.objects[name]

    async def patch(
        self, gvr: GroupVersionResource, name: str, patch: Any, namespace: str | None = None, **kw: Any
    ) -> Any:
        self.calls.append(("patch", name, (kw["patch_type"], patch)))
        self._check("patch", name)
        if name not in self.objects:
            raise NotFound(404, "NotFound")
        return self.objects[name]

    async def delete(
        self, gvr: GroupVersionResource, name: str, namespace: str | None = None, **kw: Any
    ) -> Any:
        self.calls.append(("delete", name, (kw["propagation_policy"], kw["preconditions"])))
        self._check("delete", name)
        if name not in self.objects:
            raise NotFound(404, "NotFound")
        return {}

    def writes(self) -> list[Call]:
        return [call for call in self.calls if call[0] != "get"]


@pytest.fixture
def api() -> FakeApi:
    return FakeApi()


@pytest.fixture
def world(api: FakeApi) -> tuple[Collector, GraphBuilder]:
    mapper = RestMapper()
    mapper.update(Discovery(tuple(ApiResource(gvr, ALL) for gvr in (CONFIGMAPS, NAMESPACES, WIDGETS))))
    builder = GraphBuilder(RateLimitingQueue(), RateLimitingQueue(), lambda *args: None)
    monitors = Monitors(None, builder.push)
    return Collector(builder, Operations(cast(ApiClient, api), mapper, monitors)), builder


def ref(
    name: str, uid: str, kind: str = "ConfigMap", block: bool | None = None, api_version: str = "v1"
) -> Any:
    reference: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid}
    if block is not None:
        reference["blockOwnerDeletion"] = block
    return reference


def node(
    name: str, uid: str, owners: list[Any] | None = None, namespace: str = "ns", kind: str = "ConfigMap"
) -> Node:
    api_version = "v1" if kind in ("ConfigMap", "Namespace") else "example.com/v1"
    return Node(ObjectReference(api_version, kind, name, uid, namespace), owners or ())


Run = Callable[[Node], Any]


async def test_a_dependent_of_absent_owners_is_deleted_in_the_background(
    api: FakeApi, world: tuple[Collector, GraphBuilder]
) -> None:
    collector, _ = world
    api.put("dep", "d", ownerReferences=[ref("gone", "g")])
    assert await collector.attempt_to_delete_worker(node("dep", "d")) is FORGET
    assert api.writes() == [("delete", "dep", ("Background", {"uid": "d", "resourceVersion": "1"}))]
    # The owner is now known absent: the next dependent naming it needs no GET of it.
    api.put("dep2", "d2", ownerReferences=[ref("gone", "g")])
    api.calls.clear()
    await collector.attempt_to_delete_worker(node("dep2", "d2"))
    assert [c for c in api.calls if c[0] == "get"] == [("get", "dep2", "ns")]


@pytest.mark.parametrize(
    ("finalizer", "policy"), [("orphan", "Orphan"), ("foregroundDeletion", "Foreground")]
)
async def test_the_items_own_finalizers_choose_the_policy(
    api: FakeApi, world: tuple[Collector, GraphBuilder], finalizer: str, policy: str
) -> None:
    collector, _ = world
    api.put("dep", "d", ownerReferences=[ref("gone", "g")], finalizers=[finalizer])
    await collector.attempt_to_delete_worker(node("dep", "d"))
    assert api.writes() == [("delete", "dep", (policy, {"uid": "d", "resourceVersion": "1"}))]


async def test_a_solid_owner_keeps_the_item_and_loses_the_dangling_and_waiting_references(
    api: FakeApi, world: tuple[Collector, GraphBuilder]
) -> None:
    collector, _ = world
    api.put("alive", "a")
    api.put("waiting", "w", deletionTimestamp=TS, finalizers=["foregroundDeletion"])
    refs = [ref("alive", "a"), ref("gone", "g"), ref("waiting", "w")]
    api.put("dep", "d", ownerReferences=refs)
    await collector.attempt_to_delete_worker(node("dep", "d", refs))
    strategic = {
        "metadata": {
            "ownerReferences": [{"$patch": "delete", "uid": "g"}, {"$patch": "delete", "uid": "w"}],
            "uid": "d",
        }
    }
    assert api.writes() == [("patch", "dep", ("strategic", strategic))]

    api.calls.clear()
    api.put("dep", "d", ownerReferences=[ref("alive", "a")])
    await collector.attempt_to_delete_worker(node("dep", "d"))
    assert api.writes() == []


async def test_custom_resources_fall_back_to_a_merge_patch_of_the_remaining_references(
    api: FakeApi, world: tuple[Collector, GraphBuilder]
) -> None:
    collector, _ = world
    api.put("alive", "a")
    refs = [ref("alive", "a"), ref("gone", "g")]
    api.put("w", "wu", ownerReferences=refs, resourceVersion="7")
    api.fail[("patch", "w")] = [ApiError(415, "UnsupportedMediaType")]
    await collector.attempt_to_delete_worker(node("w", "wu", refs, kind="Widget"))
    merge = {"metadata": {"resourceVersion": "7", "ownerReferences": [ref("alive", "a")]}}
    assert [w[2][0] for w in api.writes()] == ["strategic", "merge"]
    assert api.writes()[1] == ("patch", "w", ("merge", merge))


async def test_a_waiting_owner_makes_a_mid_level_item_go_in_the_foreground_unblocking_cycles_first(
    api: FakeApi, world: tuple[Collector, GraphBuilder]
) -> None:
    collector, _ = world
    api.put("top", "t", deletionTimestamp=TS, finalizers=["foregroundDeletion"])
    refs = [ref("top", "t", block=True)]
    api.put("mid", "m", ownerReferences=refs)
    mid = node("mid", "m", refs)
    leaf = node("leaf", "l", [ref("mid", "m", block=True)])
    mid.add_dependent(leaf)
    await collector.attempt_to_delete_worker(mid)
    assert api.writes() == [("delete", "mid", ("Foreground", {"uid": "m", "resourceVersion": "1"}))]

    api.calls.clear()
    leaf.deleting_dependents = True  # the dependent also waits: this item's references stop blocking first
    await collector.attempt_to_delete_worker(mid)
    unblock = {"metadata": {"ownerReferences": [{**refs[0], "blockOwnerDeletion": False}], "uid": "m"}}
    assert api.writes() == [
        ("patch", "mid", ("strategic", unblock)),
        ("delete", "mid", ("Foreground", {"uid": "m", "resourceVersion": "1"})),
    ]


async def test_an_item_that_is_gone_or_replaced_leaves_the_graph(
    api: FakeApi, world: tuple[Collector, GraphBuilder]
) -> None:
    collector, builder = world
    assert await collector.attempt_to_delete_worker(node("gone", "g")) is FORGET
    api.put("renamed", "other-uid")
    assert await collector.attempt_to_delete_worker(node("renamed", "r")) is FORGET
    events = [builder.graph_changes.get_nowait() for _ in range(2)]
    assert [(e.virtual, e.obj["metadata"]["uid"]) for e in events if e] == [(True, "g"), (True, "r")]
    assert api.writes() == []


async def test_a_cluster_scoped_item_naming_a_namespaced_owner_is_forgotten(
    api: FakeApi, world: tuple[Collector, GraphBuilder]
) -> None:
    collector, _ = world
    refs = [ref("cm", "c")]
    api.put("team", "nsuid", ownerReferences=refs)
    item = node("team", "nsuid", refs, namespace="", kind="Namespace")
    assert await collector.attempt_to_delete_worker(item) is FORGET
    assert api.calls == [("get", "team", None)] and api.writes() == []


async def test_an_unknown_owner_kind_is_requeued_without_deleting(
    api: FakeApi, world: tuple[Collector, GraphBuilder]
) -> None:
    collector, _ = world
    refs = [ref("x", "x", kind="Nope", api_version="nowhere.io/v1")]
    api.put("dep", "d", ownerReferences=refs)
    assert await collector.attempt_to_delete_worker(node("dep", "d", refs)) is REQUEUE
    assert api.writes() == []


async def test_a_virtual_node_is_requeued_until_observed_or_gone(
    api: FakeApi, world: tuple[Collector, GraphBuilder]
) -> None:
    collector, builder = world
    owner = Node(ObjectReference("v1", "ConfigMap", "o", "o", "ns"), virtual=True)
    builder.uid_to_node["o"] = owner
    api.put("o", "o")
    assert await collector.attempt_to_delete_worker(owner) is REQUEUE  # exists, but no informer saw it yet
    owner.virtual = False
    virtual_copy = Node(owner.identity, virtual=True)
    assert await collector.attempt_to_delete_worker(virtual_copy) is FORGET  # observed meanwhile
    del builder.uid_to_node["o"]
    assert await collector.attempt_to_delete_worker(virtual_copy) is FORGET  # removed meanwhile


async def test_a_conflict_on_delete_is_retried_with_the_uid_alone_when_the_owners_did_not_change(
    api: FakeApi, world: tuple[Collector, GraphBuilder]
) -> None:
    collector, _ = world
    refs = [ref("gone", "g")]
    api.put("dep", "d", ownerReferences=refs)
    original_get = api.get

    async def get_then_bump(
        gvr: GroupVersionResource, name: str, namespace: str | None = None, **kw: Any
    ) -> Any:
        obj = await original_get(gvr, name, namespace, **kw)
        result = {"metadata": dict(obj["metadata"])}
        obj["metadata"]["resourceVersion"] = "2"  # changed right after each read: a label, say
        return result

    api.get = get_then_bump  # type: ignore[method-assign]
    api.fail[("delete", "dep")] = [Conflict(409, "Conflict")]
    assert await collector.attempt_to_delete_worker(node("dep", "d", refs)) is FORGET
    assert [w[2][1] for w in api.writes()] == [{"uid": "d", "resourceVersion": "1"}, {"uid": "d"}]

    api.calls.clear()
    api.fail[("delete", "dep")] = [Conflict(409, "Conflict")]
    api.objects["dep"]["metadata"]["ownerReferences"] = refs

    async def get_then_adopt(
        gvr: GroupVersionResource, name: str, namespace: str | None = None, **kw: Any
    ) -> Any:
        obj = await get_then_bump(gvr, name, namespace, **kw)
        api.objects["dep"]["metadata"]["ownerReferences"] = [*refs, ref("new", "n")]  # owners changed too
        return obj

    api.get = get_then_adopt  # type: ignore[method-assign]
    assert await collector.attempt_to_delete_worker(node("dep", "d", refs)) is REQUEUE
    assert len(api.writes()) == 1


async def test_a_foreground_owner_without_blocking_dependents_loses_its_finalizer(
    api: FakeApi, world: tuple[Collector, GraphBuilder]
) -> None:
    collector, builder = world
    api.put("top", "t", deletionTimestamp=TS, finalizers=["example.com/keep", "foregroundDeletion"])
    top = node("top", "t")
    top.being_deleted = top.deleting_dependents = True
    blocker = node("dep", "d", [ref("top", "t", block=True)])
    top.add_dependent(blocker)
    top.add_dependent(node("free", "f", [ref("top", "t")]))
    await collector.attempt_to_delete_worker(top)
    assert api.writes() == [] and builder.attempt_to_delete.get_nowait() is blocker

    top.delete_dependent(blocker)
    api.fail[("patch", "top")] = [Conflict(409, "Conflict")]  # retried on conflict at once
    assert await collector.attempt_to_delete_worker(top) is FORGET
    merge = {"metadata": {"resourceVersion": "1", "finalizers": ["example.com/keep"]}}
    assert api.writes() == [("patch", "top", ("merge", merge))] * 2


async def test_orphaning_strips_the_owner_from_each_dependent_then_drops_the_finalizer(
    api: FakeApi, world: tuple[Collector, GraphBuilder]
) -> None:
    collector, _ = world
    api.put("job", "j", deletionTimestamp=TS, finalizers=["orphan"])
    owner = node("job", "j")
    for name in ("p1", "p2", "vanished"):
        owner.add_dependent(node(name, name, [ref("job", "j")]))
        if name != "vanished":
            api.put(name, name, ownerReferences=[ref("job", "j")])
    assert await collector.attempt_to_orphan_worker(owner) is FORGET
    patches = sorted(name for verb, name, _ in api.writes() if verb == "patch" and name != "job")
    assert patches == ["p1", "p2", "vanished"]  # a dependent already gone is fine
    assert api.writes()[-1] == (
        "patch",
        "job",
        ("merge", {"metadata": {"resourceVersion": "1", "finalizers": None}}),
    )

    api.calls.clear()
    api.fail[("patch", "p1")] = [ApiError(500, "InternalError")]
    api.put("job", "j", deletionTimestamp=TS, finalizers=["orphan"])
    assert await collector.attempt_to_orphan_worker(owner) is REQUEUE
    assert all(name != "job" for verb, name, _ in api.writes())  # the finalizer stays until all are done
