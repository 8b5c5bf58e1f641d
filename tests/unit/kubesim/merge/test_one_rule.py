"""managedFields' create fast path (kubesim.merge.created) and the general comparison of updates
(kubesim.merge.fieldset.compare) follow one rule: a map, struct or non-atomic list is a member of an
Update's set ('.') when the old object, Go-typed, lacks it (kubesim.merge.zero)."""

from __future__ import annotations

import copy
import random
from collections.abc import Iterator
from typing import Any

import pytest

from kubesim.merge.apply import record_update, server_side_apply
from kubesim.merge.fieldset import from_fields_v1
from kubesim.resources.types import BUILTIN_TYPES
from kubesim.schema import schemas

Obj = dict[str, Any]
GVK = tuple[str, str, str]
WIDGET: GVK = ("example.com", "v1", "Widget")
OWNER = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "r", "uid": "u-1", "controller": True}
WIDGET_SCHEMA = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "size": {"type": "integer"},
                "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
                "ports": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {
                        "type": "object",
                        "properties": {"name": {"type": "string"}, "port": {"type": "integer"}},
                    },
                },
                "selector": {
                    "type": "object",
                    "x-kubernetes-map-type": "atomic",
                    "additionalProperties": {"type": "string"},
                },
                "template": {"type": "object", "properties": {"image": {"type": "string"}}},
            },
        },
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    },
}


@pytest.fixture(autouse=True)
def widget_schema() -> Iterator[None]:
    schemas.register_crd_schema(WIDGET, WIDGET_SCHEMA)
    yield
    schemas.unregister_crd_schema(WIDGET)


def _meta(name: str) -> Obj:
    return {
        "name": name,
        "namespace": "default",
        "labels": {"app": name},
        "annotations": {"note": "x"},
        "finalizers": ["example.com/keep"],
        "ownerReferences": [dict(OWNER)],
    }


def pod() -> Obj:
    container = {
        "name": "c",
        "image": "i",
        "resources": {"requests": {"cpu": "1"}},
        "env": [{"name": "A", "value": "1"}],
        "ports": [{"containerPort": 80}],
        "securityContext": {"runAsUser": 1},
    }
    spec = {"containers": [container], "securityContext": {}, "nodeSelector": {"k": "v"}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": _meta("p"), "spec": spec}


def deployment() -> Obj:
    template = {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    spec = {
        "replicas": 2,
        "selector": {"matchLabels": {"app": "d"}},
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
        "template": template,
    }
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": _meta("d"), "spec": spec}


def widget() -> Obj:
    spec = {
        "size": 1,
        "tags": ["a", "b"],
        "ports": [{"name": "http", "port": 80}, {"name": "dns"}],
        "selector": {"a": "b"},
        "template": {"image": "i"},
        "extra": {"free": {"x": 1}},
    }
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": _meta("w"), "spec": spec}


def service() -> Obj:
    spec = {"ports": [{"port": 80, "protocol": "TCP"}], "selector": {"app": "s"}, "sessionAffinity": "None"}
    return {"apiVersion": "v1", "kind": "Service", "metadata": _meta("s"), "spec": spec}


CASES = [
    pytest.param(("", "v1", "Pod"), pod, id="pod"),
    pytest.param(("apps", "v1", "Deployment"), deployment, id="deployment"),
    pytest.param(WIDGET, widget, id="custom-resource"),
    pytest.param(("", "v1", "Service"), service, id="service"),
]


def _fields(obj: Obj, manager: str = "m") -> Obj:
    [entry] = [e for e in obj["metadata"]["managedFields"] if e["manager"] == manager]
    fields: Obj = entry["fieldsV1"]
    return fields


@pytest.mark.parametrize(("gvk", "build"), CASES)
def test_create_and_updates_that_build_the_same_object_record_the_same_fields(gvk: GVK, build: Any) -> None:
    created = build()
    record_update(None, created, "m", gvk, now="t")  # the create fast path
    general = build()
    record_update({}, general, "m", gvk, now="t")  # the general comparison from an empty old object
    assert _fields(general) == _fields(created)

    # the same object built by a bare create and an update that adds everything else
    bare = {"apiVersion": created["apiVersion"], "kind": created["kind"], "metadata": {"name": "x"}}
    record_update(None, bare, "m", gvk, now="t")
    full = build()
    full["metadata"]["managedFields"] = copy.deepcopy(bare["metadata"].get("managedFields", []))
    record_update(bare, full, "m", gvk, now="t")
    assert _fields(full) == _fields(created)

    # and piece by piece: metadata first, then the spec, each by an update
    partial = build()
    spec = partial.pop("spec")
    record_update(None, partial, "m", gvk, now="t")
    whole = copy.deepcopy(partial) | {"spec": spec}
    record_update(partial, whole, "m", gvk, now="t")
    assert _fields(whole) == _fields(created)


@pytest.mark.parametrize(("gvk", "build"), CASES)
def test_an_object_nobody_managed_is_owned_by_before_first_apply_as_its_create_would_be(
    gvk: GVK, build: Any
) -> None:
    created = build()
    record_update(None, created, "m", gvk, now="t")
    unmanaged = build()
    config = {"apiVersion": unmanaged["apiVersion"], "kind": unmanaged["kind"], "metadata": {"name": "x"}}
    applied = server_side_apply(
        unmanaged, config | {"metadata": {"name": "x", "labels": {"new": "1"}}}, "a", True, gvk
    )
    before = _fields(applied, "before-first-apply")
    expected = from_fields_v1(_fields(created))
    assert from_fields_v1(before) == expected, "only the applier's new label is not the pseudo manager's"


@pytest.mark.parametrize(("gvk", "build"), CASES)
def test_removing_what_a_create_added_leaves_its_manager_nothing(gvk: GVK, build: Any) -> None:
    created = build()
    record_update(None, created, "m", gvk, now="t")
    emptied = {k: v for k, v in copy.deepcopy(created).items() if k != "spec"}
    emptied["metadata"] = {"name": "x", "managedFields": created["metadata"]["managedFields"]}
    record_update(created, emptied, "other", gvk, now="t")
    assert "managedFields" not in emptied["metadata"], "'.' members go with the maps and lists removed"


def test_a_struct_embedded_by_value_is_no_member_when_an_update_finds_it_missing() -> None:
    """A Service stored without `status.loadBalancer` still has it in Go: setting it adds no '.' there."""
    gvk = ("", "v1", "Service")
    old = service() | {"status": {}}
    new = copy.deepcopy(old)
    new["status"] = {"loadBalancer": {"ingress": [{"ip": "10.0.0.1"}]}}
    record_update(old, new, "lb", gvk, "status", now="t")
    assert _fields(new, "lb") == {"f:status": {"f:loadBalancer": {"f:ingress": {}}}}


def _random_value(node: Obj | None, rng: random.Random, depth: int) -> Any:
    """A random value of a schema node: some of its fields, lists of 0-3 items with distinct keys."""
    if node is None:
        return "x"
    typed = schemas.types(node)
    if "array" in typed:
        info, element = schemas.field_info(node), schemas.items(node)
        items: list[Any] = []
        for i in range(rng.choice([0, 1, 1, 2, 3])):
            item = f"v{i}" if info.list_type == "set" else _random_value(element, rng, depth + 1)
            if info.list_type == "map" and isinstance(item, dict):
                for key in info.list_map_keys:
                    item[key] = (
                        i if "integer" in schemas.types(schemas.child(element, key) or {}) else f"k{i}"
                    )
            items.append(item)
        return items
    if "object" in typed or "properties" in node:
        properties = node.get("properties") or {}
        value: Obj = {}
        if depth > 5:
            return value
        for key in rng.sample(list(properties), min(len(properties), rng.choice([0, 1, 2, 4, 8]))):
            value[key] = _random_value(schemas.child(node, key), rng, depth + 1)
        if not properties and isinstance(node.get("additionalProperties"), dict):
            for i in range(rng.choice([0, 1, 2])):
                value[f"a{i}"] = _random_value(schemas.child(node, "a"), rng, depth + 1)
        return value
    if "integer" in typed:
        return rng.randint(0, 3)
    if "boolean" in typed:
        return rng.random() < 0.5
    return rng.choice(["s", "t", None])


def test_random_objects_of_every_served_kind_get_one_field_set_from_both_paths() -> None:
    rng = random.Random(7)
    kinds = [(t.group, t.version, t.kind) for t in BUILTIN_TYPES] + [WIDGET]
    differ = []
    for gvk in kinds:
        root = schemas.root(gvk)
        assert root is not None
        for _ in range(25):
            obj = _random_value(root, rng, 0)
            obj["metadata"] = _random_value(schemas.child(root, "metadata"), rng, 1) | {"name": "n"}
            obj["metadata"].pop("managedFields", None)
            fast, general = copy.deepcopy(obj), copy.deepcopy(obj)
            record_update(None, fast, "m", gvk, now="t")
            record_update({}, general, "m", gvk, now="t")
            if fast["metadata"].get("managedFields") != general["metadata"].get("managedFields"):
                differ.append((gvk, obj))
    assert not differ, differ[:2]
