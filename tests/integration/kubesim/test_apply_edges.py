"""Server-side apply over HTTP on the edges of structured-merge-diff's ToFieldSet (typed/tofieldset.go):
an empty granular map or list in an apply configuration lists nothing (doMap/doList visit no items, and a
declared field is never a member by itself), while an atomic one is a leaf. So an applier that sends
`{}` or `[]` for a field does not own it, and stopping to send it removes nothing. A map key holding null is
a member all the same (visitMapItems inserts every key that is not a declared field), and the merge keeps
the null (typed/merge.go keeps the right-hand side of a leaf): a custom resource then stores it where the
schema allows null and fails validation where it does not, as the apiserver's CR validation does."""

from __future__ import annotations

from typing import Any

import pytest

from kubesim import KubeSim
from kubesim.pytest_plugin import KubeSimFactory
from tests.kubesim_api import Api

Obj = dict[str, Any]
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
GEARS = "/apis/example.com/v1/namespaces/default/gears"
APPLY = "application/apply-patch+yaml"


@pytest.fixture
async def sim(kubesim_factory: KubeSimFactory) -> KubeSim:
    return await kubesim_factory(kubelet=False, seed=1)


def _gear_crd() -> Obj:
    box = {"type": "object", "properties": {"size": {"type": "integer"}}}
    spec = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "slots": {"type": "object", "additionalProperties": {"type": "integer"}},
            "labels": {
                "type": "object",
                "x-kubernetes-map-type": "atomic",
                "additionalProperties": {"type": "string"},
            },
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "args": {"type": "array", "items": {"type": "string"}},
            "opt": {"type": "object", "additionalProperties": {"type": "integer", "nullable": True}},
            "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "box": box,
            "boxes": {"type": "object", "additionalProperties": box},
            "nboxes": {"type": "object", "additionalProperties": {**box, "nullable": True}},
        },
    }
    version = {
        "name": "v1",
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}},
    }
    names = {"plural": "gears", "singular": "gear", "kind": "Gear", "listKind": "GearList"}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gears.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced", "names": names, "versions": [version]},
    }


@pytest.fixture
async def gears(api: Api) -> Api:
    await api.ok("POST", CRDS, _gear_crd())
    return api


async def _apply(api: Api, manager: str, spec: Obj) -> tuple[int, Any]:
    body = {"apiVersion": "example.com/v1", "kind": "Gear", "metadata": {"name": "g"}, "spec": spec}
    return await api.call("PATCH", f"{GEARS}/g?fieldManager={manager}", body, content_type=APPLY)


def _applied(obj: Obj, manager: str) -> Obj | None:
    for entry in obj["metadata"].get("managedFields", []):
        if entry["manager"] == manager and entry["operation"] == "Apply":
            fields: Obj = entry["fieldsV1"]
            return fields
    return None


async def test_empty_granular_map_and_list_are_not_members_atomic_ones_are(gears: Api) -> None:
    empty = {"name": "n", "slots": {}, "tags": [], "labels": {}, "args": []}
    status, gear = await _apply(gears, "a", empty)
    assert status == 201, gear
    assert gear["spec"] == empty  # the merge keeps them: nothing was there
    # slots (granular map) and tags (set list) list nothing; the atomic map and list are leaves
    assert _applied(gear, "a") == {"f:spec": {"f:args": {}, "f:labels": {}, "f:name": {}}}


async def test_stopping_to_send_an_empty_granular_map_removes_nothing(gears: Api) -> None:
    status, _ = await _apply(gears, "a", {"name": "n", "slots": {}, "tags": [], "labels": {}})
    assert status == 201
    status, gear = await _apply(gears, "a", {"name": "n"})
    assert status == 200, gear
    # a never owned slots nor tags: they stay; the atomic labels it owned go
    assert gear["spec"] == {"name": "n", "slots": {}, "tags": []}
    assert _applied(gear, "a") == {"f:spec": {"f:name": {}}}


async def test_a_null_map_key_is_a_member_and_kept_where_the_schema_allows_null(gears: Api) -> None:
    spec = {"opt": {"x": None, "y": 1}, "extra": {"free": None, "deep": {"v": None}}}
    status, gear = await _apply(gears, "a", spec)
    assert status == 201, gear
    assert gear["spec"] == spec
    assert _applied(gear, "a") == {
        "f:spec": {
            "f:extra": {"f:deep": {".": {}, "f:v": {}}, "f:free": {}},
            "f:opt": {"f:x": {}, "f:y": {}},
        }
    }
    # the applier owns the null keys: when it stops sending them they go
    status, gear = await _apply(gears, "a", {"opt": {"y": 1}})
    assert status == 200, gear
    assert gear["spec"] == {"opt": {"y": 1}}


async def test_a_null_map_key_where_the_schema_forbids_null_is_invalid(gears: Api) -> None:
    status, body = await _apply(gears, "a", {"slots": {"x": None}})
    assert status == 422, body
    assert body["details"]["causes"] == [
        {
            "reason": "FieldValueTypeInvalid",
            "message": 'Invalid value: "null": spec.slots.x in body must be of type integer: "null"',
            "field": "spec.slots.x",
        }
    ]


async def _emptied_key_owned_elsewhere(api: Api, field: str) -> tuple[int, Any]:
    """u creates the key x (an Update owns the key itself, FieldsV1 `.`), a takes x.size over by force,
    then a stops applying x: x.size goes, the key x stays (u owns it) with nothing left in it."""
    body: Obj = {"apiVersion": "example.com/v1", "kind": "Gear", "metadata": {"name": "g"}}
    await api.ok("POST", f"{GEARS}?fieldManager=u", body | {"spec": {field: {"x": {"size": 1}}}})
    status, gear = await _apply(api, "a", {"name": "n", field: {"x": {"size": 2}}})
    assert status == 409, gear
    forced = body | {"spec": {"name": "n", field: {"x": {"size": 2}}}}
    gear = await api.ok("PATCH", f"{GEARS}/g?fieldManager=a&force=true", forced, content_type=APPLY)
    [u] = [e for e in gear["metadata"]["managedFields"] if e["manager"] == "u"]
    assert u["fieldsV1"] == {"f:spec": {".": {}, f"f:{field}": {".": {}, "f:x": {}}}}
    return await _apply(api, "a", {"name": "n"})


async def test_a_map_key_emptied_by_pruning_but_owned_elsewhere_becomes_null(gears: Api) -> None:
    # structured-merge-diff's RemoveItems leaves an emptied map as null (typed/remove.go); the key stays
    # in the result because u owns it, and the CR keeps the null where its schema is nullable
    status, gear = await _emptied_key_owned_elsewhere(gears, "nboxes")
    assert status == 200, gear
    assert gear["spec"] == {"name": "n", "nboxes": {"x": None}}
    [u] = [e for e in gear["metadata"]["managedFields"] if e["manager"] == "u"]
    assert u["fieldsV1"] == {"f:spec": {".": {}, "f:nboxes": {".": {}, "f:x": {}}}}  # typed Compare


async def test_a_null_left_by_pruning_where_the_schema_forbids_it_is_invalid(gears: Api) -> None:
    status, body = await _emptied_key_owned_elsewhere(gears, "boxes")
    assert status == 422, body
    assert [c["field"] for c in body["details"]["causes"]] == ["spec.boxes.x"]
    assert 'spec.boxes.x in body must be of type object: "null"' in body["message"]


async def test_a_struct_field_emptied_by_pruning_goes_even_if_owned_elsewhere(gears: Api) -> None:
    # unlike a map key, a declared field left null is no member of the pruned set, and the applier's last
    # set holds it (EnsureNamedFieldsAreMembers): addBackDanglingItems removes it as a whole
    body: Obj = {"apiVersion": "example.com/v1", "kind": "Gear", "metadata": {"name": "g"}}
    await gears.ok("POST", f"{GEARS}?fieldManager=u", body | {"spec": {"box": {"size": 1}}})
    forced = body | {"spec": {"name": "n", "box": {"size": 2}}}
    await gears.ok("PATCH", f"{GEARS}/g?fieldManager=a&force=true", forced, content_type=APPLY)
    status, gear = await _apply(gears, "a", {"name": "n"})
    assert status == 200, gear
    assert gear["spec"] == {"name": "n"}
