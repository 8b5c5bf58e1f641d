"""The table behind test_strict_generated.py (no tests of its own): resources x mutations x verbs,
each case a request a real kube-apiserver refuses, with the code it answers (upstream decoding and
validation, apimachinery's errors.go shapes), and the object whose stored state must not change."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

NS = "/namespaces/default"
APPLY = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
POD_SPEC: dict[str, Any] = {"containers": [{"name": "c", "image": "i"}], "restartPolicy": "Never"}
TEMPLATE: dict[str, Any] = {"metadata": {"labels": {"a": "b"}}, "spec": POD_SPEC}


@dataclass(frozen=True)
class Resource:
    collection: str  # the namespaced collection path
    valid: dict[str, Any]  # a valid object named "keep", created before the cases run
    custom: bool = False  # a custom resource: no strategic merge patch, schema errors are 422

    @property
    def name(self) -> str:
        return str(self.valid["metadata"]["name"])

    @property
    def item(self) -> str:
        return f"{self.collection}/{self.name}"


@dataclass(frozen=True)
class Case:
    label: str
    method: str
    path: str
    codes: frozenset[int]  # what kube-apiserver may answer
    body: bytes = b""
    content_type: str = "application/json"
    unchanged: str = ""  # an object path whose resourceVersion must be the same afterwards
    absent: str = ""  # an object path that must still be missing afterwards


def _obj(kind: str, api_version: str, spec_or_data: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": "keep"}, **spec_or_data}


FOO_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": True,
            "properties": {
                "replicas": {"type": "integer", "format": "int32"},
                "mode": {"type": "string"},
                "on": {"type": "boolean"},
            },
        }
    },
}
RESOURCES = (
    Resource(
        "/apis/apps/v1" + NS + "/deployments",
        _obj(
            "Deployment",
            "apps/v1",
            {
                "spec": {
                    "replicas": 1,
                    "selector": {"matchLabels": {"a": "b"}},
                    "template": {**TEMPLATE, "spec": {**POD_SPEC, "restartPolicy": "Always"}},
                }
            },
        ),
    ),
    Resource(
        "/apis/batch/v1" + NS + "/jobs",
        _obj("Job", "batch/v1", {"spec": {"completions": 2, "parallelism": 1, "template": TEMPLATE}}),
    ),
    Resource("/api/v1" + NS + "/configmaps", _obj("ConfigMap", "v1", {"data": {"k": "v"}})),
    Resource(
        "/apis/strict.example.com/v1" + NS + "/foos",
        _obj("Foo", "strict.example.com/v1", {"spec": {"replicas": 1, "mode": "m", "on": True}}),
        custom=True,
    ),
)
INT32_WRONG = ("3", 1.5, True, 2**31, -(2**31) - 1, 2**63, {"n": 1}, [1])
WRONG_FIELDS: dict[str, tuple[tuple[tuple[str, ...], Any], ...]] = {
    "Deployment": (
        *((("spec", "replicas"), v) for v in INT32_WRONG),
        (("spec", "template"), "oops"),
        (("spec", "selector", "matchLabels"), ["a"]),
        (("spec", "selector"), 7),
        (("spec", "paused"), "yes"),
        (("spec", "minReadySeconds"), "1"),
        (("spec", "strategy"), "Recreate"),
    ),
    "Job": (
        (("spec", "podFailurePolicy"), "oops"),
        (("spec", "completions"), 2.5),
        (("spec", "parallelism"), "1"),
        (("spec", "backoffLimit"), 2**31),
        (("spec", "activeDeadlineSeconds"), 2**63),
        (("spec", "suspend"), "true"),
        (("spec", "template"), "oops"),
    ),
    "ConfigMap": (
        (("data", "k"), 1),
        (("data", "k"), True),
        (("data", "k"), {"a": 1}),
        (("data", "k"), ["v"]),
        (("data",), ["a"]),
        (("binaryData", "k"), 5),
        (("immutable",), "yes"),
    ),
    "Foo": (
        (("spec", "replicas"), "3"),
        (("spec", "replicas"), 1.5),
        (("spec", "mode"), 5),
        (("spec", "on"), "yes"),
    ),
}


def with_value(obj: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    target = out
    for step in path[:-1]:
        target = target.setdefault(step, {})
    target[path[-1]] = value
    return out


def _nested(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    out: Any = value
    for step in reversed(path):
        out = {step: out}
    return dict(out)


DEEP = "__deep__"  # stands for a nested document spliced in as bytes (too deep for json.dumps or deepcopy)
_splice: dict[str, bytes] = {}


def dumps_case(value: Any) -> bytes:
    raw = json.dumps(value).encode()  # not orjson: it refuses integers past 64 bits
    return raw.replace(f'"{DEEP}"'.encode(), _splice[DEEP]) if DEEP in _splice else raw


def _writes(
    res: Resource, label: str, obj: dict[str, Any], path: tuple[str, ...], value: Any, code: int
) -> Iterator[Case]:
    """One wrong document, sent by every write verb: create (under a new name), update, the three patch
    types the resource takes, and server-side apply."""
    codes = frozenset((code,))
    created = with_value(obj, ("metadata", "name"), "fresh")
    yield Case(
        f"{label} POST", "POST", res.collection, codes, dumps_case(created), absent=f"{res.collection}/fresh"
    )
    yield Case(f"{label} PUT", "PUT", res.item, codes, dumps_case(obj), unchanged=res.item)
    patch_types = (MERGE,) if res.custom else (MERGE, STRATEGIC)
    for patch_type in patch_types:
        yield Case(
            f"{label} {patch_type}",
            "PATCH",
            res.item,
            codes,
            dumps_case(_nested(path, value)),
            patch_type,
            unchanged=res.item,
        )
    op = [{"op": "add", "path": "/" + "/".join(path), "value": value}]
    parent: Any = res.valid
    for step in path[:-1]:
        parent = parent.get(step) if isinstance(parent, dict) else None
    op_codes = codes if isinstance(parent, dict) else frozenset((422,))  # jsonpatch: missing path, 422
    yield Case(
        f"{label} json-patch", "PATCH", res.item, op_codes, dumps_case(op), JSON_PATCH, unchanged=res.item
    )
    # forced, so that no field-ownership conflict (409) comes first: the applied object is what is wrong;
    # upstream fails to build its typed patch object (400); kubesim checks a CR's schema after merging (422)
    apply_codes = frozenset((400, 422)) if res.custom else codes
    yield Case(
        f"{label} apply",
        "PATCH",
        res.item + "?fieldManager=t&force=true",
        apply_codes,
        dumps_case(obj),
        APPLY,
        unchanged=res.item,
    )


WRONG_METADATA: tuple[tuple[tuple[str, ...], Any], ...] = (
    (("metadata", "labels"), {"a": 1}),
    (("metadata", "labels"), ["a"]),
    (("metadata", "annotations"), {"a": True}),
    (("metadata", "finalizers"), [1]),
    (("metadata", "generation"), "1"),
    (("metadata", "deletionGracePeriodSeconds"), "x"),
    (("metadata", "ownerReferences"), [{"apiVersion": "v1", "kind": "X", "name": "n", "uid": 5}]),
    (("metadata", "ownerReferences"), [{"apiVersion": "v1", "kind": "X", "name": "n", "controller": "yes"}]),
    (("metadata", "ownerReferences"), ["owner"]),
    (("metadata", "creationTimestamp"), "yesterday"),  # metav1.Time decodes with time.Parse
    (("metadata", "deletionTimestamp"), "2024-02-30T00:00:00Z"),
)
WRONG_STATUS: dict[str, tuple[tuple[tuple[str, ...], Any], ...]] = {
    "Deployment": (
        (("status", "replicas"), "3"),
        (("status", "replicas"), 2**31),
        (("status", "conditions"), "x"),
        (("status", "conditions"), [{"type": "Available", "status": "True", "lastUpdateTime": "yesterday"}]),
    ),
    "Job": (
        (("status", "active"), "1"),
        (("status", "startTime"), 5),
        (("status", "uncountedTerminatedPods"), []),
        (("status", "startTime"), "garbage"),
        (("status", "completionTime"), "2024-13-01T00:00:00Z"),
    ),
}


def wrong_types() -> Iterator[Case]:
    for res in RESOURCES:
        for path, value in WRONG_FIELDS[res.valid["kind"]]:
            label = f"{res.valid['kind']} {'.'.join(path)}={value!r:.20}"
            yield from _writes(
                res, label, with_value(res.valid, path, value), path, value, 422 if res.custom else 400
            )
        for path, value in WRONG_METADATA:  # ObjectMeta is decoded alike for every type
            label = f"{res.valid['kind']} {'.'.join(path)}={value!r:.30}"
            yield from _writes(res, label, with_value(res.valid, path, value), path, value, 400)
        for path, value in WRONG_STATUS.get(res.valid["kind"], ()):  # the status subresource decodes too
            label = f"{res.valid['kind']} /status {'.'.join(path)}={value!r:.20}"
            wrong = dumps_case(with_value(res.valid, path, value))
            status = f"{res.item}/status"
            yield Case(f"{label} PUT", "PUT", status, frozenset((400,)), wrong, unchanged=res.item)
            patch = dumps_case(_nested(path, value))
            yield Case(f"{label} merge", "PATCH", status, frozenset((400,)), patch, MERGE, unchanged=res.item)


QUANTITIES: tuple[tuple[str, dict[str, Any], int], ...] = (
    ("cpu=lots", {"limits": {"cpu": "lots"}}, 400),  # ParseQuantity fails while decoding: 400
    ("memory=1GB", {"requests": {"memory": "1GB"}}, 400),
    ("cpu=1kk", {"limits": {"cpu": "1kk"}}, 400),
    ("memory=true", {"limits": {"memory": True}}, 400),
    ("cpu=-1", {"limits": {"cpu": "-1"}}, 422),  # decodes, fails validation: 422
    ("requests over limits", {"limits": {"cpu": "1"}, "requests": {"cpu": "1500m"}}, 422),
)


def wrong_quantities() -> Iterator[Case]:
    """Container resources in the pod templates of Deployments and Jobs, by every write verb."""
    for res in RESOURCES[:2]:
        for label, resources, code in QUANTITIES:
            template = copy.deepcopy(res.valid["spec"]["template"])
            template["spec"]["containers"][0]["resources"] = resources
            obj = with_value(res.valid, ("spec", "template"), template)
            name = f"{res.valid['kind']} resources {label}"
            yield from _writes(res, name, obj, ("spec", "template"), template, code)


def deep_nesting() -> Iterator[Case]:
    """Deeper than the store takes (orjson encodes 255 levels), or than Python recursion: 400, up front."""
    cases: list[Case] = []
    for levels in (260, 900, 5000):
        _splice[DEEP] = b'{"a":' * levels + b"1" + b"}" * levels
        for res in RESOURCES:
            field = ("spec", "x") if "spec" in res.valid else ("data", "x")
            label = f"{res.valid['kind']} depth {levels}"
            cases.extend(_writes(res, label, with_value(res.valid, field, DEEP), field, DEEP, 400))
    _splice[DEEP] = b'{"a":' * 150 + b"1" + b"}" * 150
    res = RESOURCES[3]
    chain = [
        {"op": "add", "path": "/spec/x", "value": DEEP},
        {"op": "copy", "from": "/spec/x", "path": "/spec/x" + "/a" * 100 + "/b"},  # 250 levels
    ]
    label = "Foo json-patch copies a subtree below itself"
    cases.append(
        Case(label, "PATCH", res.item, frozenset((400,)), dumps_case(chain), JSON_PATCH, unchanged=res.item)
    )
    del _splice[DEEP]
    yield from cases
