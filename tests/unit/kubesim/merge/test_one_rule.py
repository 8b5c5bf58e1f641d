"""managedFields' create fast path (kubesim.merge.created) and the general comparison of updates
(kubesim.merge.fieldset.compare) follow one rule: a map, struct or non-atomic list is a member of an
Update's set ('.') when the old object, Go-typed, lacks it (kubesim.merge.zero)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from kubesim.merge.apply import record_update, server_side_apply
from kubesim.merge.fieldset import from_fields_v1
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
