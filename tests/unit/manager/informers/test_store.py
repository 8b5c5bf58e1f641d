"""Indexer, key functions and ingest transforms (pure logic)."""

from __future__ import annotations

from typing import Any

import pytest

from manager.apimachinery.objects import BadObjectError, object_key, split_key
from manager.informers.store import NAMESPACE_INDEX, Indexer, controller_uid_index, orphan_index_key
from manager.informers.transform import chain, project_metadata, strip_managed_fields


def pod(
    name: str, ns: str = "default", owner: str | None = None, labels: dict[str, str] | None = None
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "labels": labels or {}, "resourceVersion": "1"}
    if owner:
        meta["ownerReferences"] = [{"uid": owner, "controller": True, "kind": "ReplicaSet", "name": "rs"}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta}


def test_keys() -> None:
    assert object_key(pod("a", "ns1")) == "ns1/a"
    assert object_key({"metadata": {"name": "node-1"}}) == "node-1"
    assert split_key("ns1/a") == ("ns1", "a")
    assert split_key("node-1") == ("", "node-1")


@pytest.mark.parametrize(
    "bad",
    [
        {},
        {"metadata": {}},
        {"metadata": {"name": 3}},
        {"metadata": {"name": ""}},
        {"metadata": {"name": "a", "namespace": 1}},
    ],
)
def test_bad_objects_raise(bad: dict[str, Any]) -> None:
    with pytest.raises((BadObjectError, KeyError)):
        object_key(bad)


def test_upsert_delete_and_namespace_index() -> None:
    store = Indexer()
    assert store.upsert("ns1/a", pod("a", "ns1")) is None
    store.upsert("ns1/b", pod("b", "ns1"))
    store.upsert("ns2/a", pod("a", "ns2"))
    old = store.upsert("ns1/a", pod("a", "ns1", labels={"x": "y"}))
    assert old is not None and old["metadata"]["labels"] == {}
    assert len(store) == 3
    assert sorted(store.index_keys(NAMESPACE_INDEX, "ns1")) == ["ns1/a", "ns1/b"]
    assert [o["metadata"]["name"] for o in store.by_namespace("ns2")] == ["a"]
    assert store.get("ns1", "a") is store.get_by_key("ns1/a")
    assert store.delete("ns1/b") is not None
    assert store.delete("ns1/b") is None
    assert store.index_keys(NAMESPACE_INDEX, "ns1") == ["ns1/a"]
    store.delete("ns2/a")
    assert "ns2" not in store.list_index_values(NAMESPACE_INDEX)


def test_custom_indexer_added_after_items_and_multi_valued() -> None:
    store = Indexer()
    store.upsert("d/a", pod("a", owner="u1"))
    store.upsert("d/b", pod("b", owner="u1"))
    store.upsert("d/c", pod("c"))
    store.add_indexers(
        {"owner": controller_uid_index, "labels": lambda o: list(o["metadata"]["labels"].values())}
    )
    assert sorted(store.index_keys("owner", "u1")) == ["d/a", "d/b"]
    # re-owning moves the key between index values
    store.upsert("d/b", pod("b", owner="u2"))
    assert store.index_keys("owner", "u1") == ["d/a"]
    assert store.index_keys("owner", "u2") == ["d/b"]
    # multi-valued
    store.upsert("d/c", pod("c", labels={"x": "1", "y": "2"}))
    assert store.index_keys("labels", "1") == ["d/c"] and store.index_keys("labels", "2") == ["d/c"]
    store.delete("d/c")
    assert store.index_keys("labels", "1") == []
    with pytest.raises(ValueError):
        store.add_indexers({"owner": controller_uid_index})
    with pytest.raises(KeyError):
        store.index_keys("nope", "x")


def test_failing_index_func_does_not_break_the_store() -> None:
    store = Indexer({"boom": lambda o: [o["spec"]["nodeName"]]})
    store.upsert("d/a", pod("a"))
    assert store.get_by_key("d/a") is not None
    assert store.index_errors == 1


def test_controller_uid_index_ignores_non_controller_refs() -> None:
    obj = pod("a")
    obj["metadata"]["ownerReferences"] = [{"uid": "x", "controller": False}, {"uid": "y"}]
    assert controller_uid_index(obj) == [orphan_index_key(obj["metadata"]["namespace"])]
    assert controller_uid_index(pod("a", owner="z")) == ["z"]


def test_transforms() -> None:
    obj = pod("a")
    obj["metadata"]["managedFields"] = [{"manager": "kubectl"}]
    obj["spec"] = {"containers": []}
    stripped = strip_managed_fields(obj)
    assert stripped is obj and "managedFields" not in obj["metadata"]
    assert strip_managed_fields(stripped) is stripped  # idempotent
    projected = project_metadata(obj)
    assert projected == {
        "apiVersion": "meta.k8s.io/v1",
        "kind": "PartialObjectMetadata",
        "metadata": obj["metadata"],
    }
    assert project_metadata(projected) is projected
    both = chain(strip_managed_fields, lambda o: {**o, "extra": True})
    assert both(pod("b"))["extra"] is True
    with pytest.raises(KeyError):
        strip_managed_fields({"kind": "Pod"})


def test_owner_index_follows_owner_changes_and_keeps_its_place_otherwise() -> None:
    store = Indexer({"owner": controller_uid_index})
    store.upsert("d/a", pod("a", owner="u1"))
    # a status-like update: equal ownerReferences in a new object, the index is left as it was
    updated = pod("a", owner="u1")
    updated["metadata"]["resourceVersion"] = "2"
    store.upsert("d/a", updated)
    assert store.index_keys("owner", "u1") == ["d/a"]
    # released by its owner: an orphan of its namespace now; adopted again: back under the owner
    store.upsert("d/a", pod("a"))
    assert store.index_keys("owner", "u1") == []
    assert store.index_keys("owner", orphan_index_key("default")) == ["d/a"]
    store.upsert("d/a", pod("a", owner="u2"))
    assert store.list_index_values("owner") == ["u2"]
    # the controller flag alone changing counts too
    demoted = pod("a", owner="u2")
    demoted["metadata"]["ownerReferences"][0]["controller"] = False
    store.upsert("d/a", demoted)
    assert store.list_index_values("owner") == [orphan_index_key("default")]


def test_an_unhashable_index_function_works_on_updates() -> None:
    class ByName:
        __hash__ = None  # type: ignore[assignment]

        def __eq__(self, other: object) -> bool:
            return isinstance(other, ByName)

        def __call__(self, obj: dict[str, Any]) -> list[str]:
            return [obj["metadata"]["name"]]

    store = Indexer({"name": ByName()})
    store.upsert("default/a", pod("a"))
    store.upsert("default/a", pod("a", owner="u1"))
    assert store.index_keys("name", "a") == ["default/a"]
