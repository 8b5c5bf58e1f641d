"""Owner references and finalizers follow controller-runtime's controllerutil rules."""

from __future__ import annotations

from typing import Any

import pytest

from manager.apimachinery.finalizers import add_finalizer, contains_finalizer, remove_finalizer
from manager.apimachinery.ownership import (
    AlreadyOwnedError,
    OwnerReferenceError,
    set_controller_reference,
    set_owner_reference,
)


def obj(
    kind: str, name: str, namespace: str | None = "default", uid: str = "", api: str = "v1"
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": uid or f"uid-{name}"}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": api, "kind": kind, "metadata": meta}


OWNER = obj("Greeting", "g", api="demo.example.com/v1")


def test_set_controller_reference_builds_the_reference_from_the_owner() -> None:
    child = obj("ConfigMap", "c")
    set_controller_reference(OWNER, child)
    assert child["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "demo.example.com/v1",
            "kind": "Greeting",
            "name": "g",
            "uid": "uid-g",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def test_block_owner_deletion_can_be_left_out() -> None:
    child = obj("ConfigMap", "c")
    set_controller_reference(OWNER, child, block_owner_deletion=False)
    assert "blockOwnerDeletion" not in child["metadata"]["ownerReferences"][0]


def test_setting_it_again_replaces_the_same_owners_reference_even_across_versions_and_uids() -> None:
    child = obj("ConfigMap", "c")
    set_controller_reference(OWNER, child)
    newer = obj("Greeting", "g", uid="uid-2", api="demo.example.com/v2")
    set_controller_reference(newer, child)
    refs = child["metadata"]["ownerReferences"]
    assert len(refs) == 1
    assert refs[0]["apiVersion"] == "demo.example.com/v2" and refs[0]["uid"] == "uid-2"


def test_another_controller_owner_is_refused_and_the_object_left_alone() -> None:
    child = obj("ConfigMap", "c")
    set_controller_reference(obj("Other", "o", api="x.io/v1"), child)
    before = [dict(r) for r in child["metadata"]["ownerReferences"]]
    with pytest.raises(AlreadyOwnedError, match="already owned by another Other controller o"):
        set_controller_reference(OWNER, child)
    assert child["metadata"]["ownerReferences"] == before


def test_non_controller_owners_do_not_block_a_controller_reference() -> None:
    child = obj("ConfigMap", "c")
    set_owner_reference(obj("Other", "o", api="x.io/v1"), child)
    set_controller_reference(OWNER, child)
    refs = child["metadata"]["ownerReferences"]
    assert [r["kind"] for r in refs] == ["Other", "Greeting"]
    assert "controller" not in refs[0] and refs[1]["controller"] is True


def test_same_name_in_another_group_is_another_owner() -> None:
    child = obj("ConfigMap", "c")
    set_controller_reference(obj("Greeting", "g", api="other.io/v1"), child)
    with pytest.raises(AlreadyOwnedError):
        set_controller_reference(OWNER, child)


@pytest.mark.parametrize(
    ("owner_ns", "child_ns", "error"),
    [
        ("default", None, "cluster-scoped resource must not have a namespace-scoped owner"),
        ("default", "other", "cross-namespace owner references are disallowed"),
    ],
)
def test_scope_rules(owner_ns: str, child_ns: str | None, error: str) -> None:
    owner = obj("Greeting", "g", namespace=owner_ns, api="demo.example.com/v1")
    for setter in (set_controller_reference, set_owner_reference):
        child = obj("Thing", "c", namespace=child_ns)
        with pytest.raises(OwnerReferenceError, match=error):
            setter(owner, child)
        assert "ownerReferences" not in child["metadata"]


def test_a_cluster_scoped_owner_may_own_anything() -> None:
    owner = obj("Node", "n", namespace=None)
    for child_ns in ("default", None):
        child = obj("Thing", "c", namespace=child_ns)
        set_controller_reference(owner, child)
        assert child["metadata"]["ownerReferences"][0]["kind"] == "Node"


def test_an_owner_without_identity_is_refused() -> None:
    owner = {"kind": "Greeting", "metadata": {"name": "g", "namespace": "default"}}
    with pytest.raises(OwnerReferenceError, match=r"apiVersion, metadata\.uid"):
        set_owner_reference(owner, obj("ConfigMap", "c"))


def test_set_owner_reference_is_not_a_controller_reference_and_upserts() -> None:
    child = obj("ConfigMap", "c")
    set_owner_reference(OWNER, child)
    set_owner_reference(OWNER, child)
    assert child["metadata"]["ownerReferences"] == [
        {"apiVersion": "demo.example.com/v1", "kind": "Greeting", "name": "g", "uid": "uid-g"}
    ]


def test_finalizers_report_whether_they_changed_the_object() -> None:
    o: dict[str, Any] = {"metadata": {}}
    assert not contains_finalizer(o, "a/b")
    assert add_finalizer(o, "a/b")
    assert not add_finalizer(o, "a/b")
    assert add_finalizer(o, "c/d")
    assert o["metadata"]["finalizers"] == ["a/b", "c/d"]
    assert contains_finalizer(o, "a/b")
    assert remove_finalizer(o, "a/b")
    assert not remove_finalizer(o, "a/b")
    assert o["metadata"]["finalizers"] == ["c/d"]


def test_remove_finalizer_removes_duplicates_and_tolerates_absence() -> None:
    o: dict[str, Any] = {"metadata": {"finalizers": ["x", "y", "x"]}}
    assert remove_finalizer(o, "x")
    assert o["metadata"]["finalizers"] == ["y"]
    assert not remove_finalizer({}, "x")
    assert not remove_finalizer({"metadata": {"finalizers": None}}, "x")
