"""The table behind test_strict_generated.py (no tests of its own): resources × mutations × verbs, each case a request a real
kube-apiserver refuses, with the code it answers (upstream decoding and validation, apimachinery's
errors.go shapes), and the object whose stored state must not change."""

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


def _with(obj: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
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


def _dumps(value: Any) -> bytes:
    raw = json.dumps(value).encode()  # not orjson: it refuses integers past 64 bits
    return raw.replace(f'"{DEEP}"'.encode(), _splice[DEEP]) if DEEP in _splice else raw


def _writes(
    res: Resource, label: str, obj: dict[str, Any], path: tuple[str, ...], value: Any, code: int
) -> Iterator[Case]:
    """One wrong document, sent by every write verb: create (under a new name), update, the three patch
    types the resource takes, and server-side apply."""
    codes = frozenset((code,))
    created = _with(obj, ("metadata", "name"), "fresh")
    yield Case(
        f"{label} POST", "POST", res.collection, codes, _dumps(created), absent=f"{res.collection}/fresh"
    )
    yield Case(f"{label} PUT", "PUT", res.item, codes, _dumps(obj), unchanged=res.item)
    patch_types = (MERGE,) if res.custom else (MERGE, STRATEGIC)
    for patch_type in patch_types:
        yield Case(
            f"{label} {patch_type}",
            "PATCH",
            res.item,
            codes,
            _dumps(_nested(path, value)),
            patch_type,
            unchanged=res.item,
        )
    op = [{"op": "add", "path": "/" + "/".join(path), "value": value}]
    parent: Any = res.valid
    for step in path[:-1]:
        parent = parent.get(step) if isinstance(parent, dict) else None
    op_codes = codes if isinstance(parent, dict) else frozenset((422,))  # jsonpatch: missing path, 422
    yield Case(f"{label} json-patch", "PATCH", res.item, op_codes, _dumps(op), JSON_PATCH, unchanged=res.item)
    # forced, so that no field-ownership conflict (409) comes first: the applied object is what is wrong;
    # upstream fails to build its typed patch object (400); kubesim checks a CR's schema after merging (422)
    apply_codes = frozenset((400, 422)) if res.custom else codes
    yield Case(
        f"{label} apply",
        "PATCH",
        res.item + "?fieldManager=t&force=true",
        apply_codes,
        _dumps(obj),
        APPLY,
        unchanged=res.item,
    )


def wrong_types() -> Iterator[Case]:
    for res in RESOURCES:
        for path, value in WRONG_FIELDS[res.valid["kind"]]:
            label = f"{res.valid['kind']} {'.'.join(path)}={value!r:.20}"
            yield from _writes(
                res, label, _with(res.valid, path, value), path, value, 422 if res.custom else 400
            )


def deep_nesting() -> Iterator[Case]:
    """Deeper than the store takes (orjson encodes 255 levels), or than Python's recursion limit: 400 up front."""
    cases: list[Case] = []
    for levels in (260, 900, 5000):
        _splice[DEEP] = b'{"a":' * levels + b"1" + b"}" * levels
        for res in RESOURCES:
            field = ("spec", "x") if "spec" in res.valid else ("data", "x")
            label = f"{res.valid['kind']} depth {levels}"
            cases.extend(_writes(res, label, _with(res.valid, field, DEEP), field, DEEP, 400))
    _splice[DEEP] = b'{"a":' * 150 + b"1" + b"}" * 150
    res = RESOURCES[3]
    chain = [
        {"op": "add", "path": "/spec/x", "value": DEEP},
        {"op": "copy", "from": "/spec/x", "path": "/spec/x" + "/a" * 100 + "/b"},  # 250 levels
    ]
    label = "Foo json-patch copies a subtree below itself"
    cases.append(
        Case(label, "PATCH", res.item, frozenset((400,)), _dumps(chain), JSON_PATCH, unchanged=res.item)
    )
    del _splice[DEEP]
    yield from cases


BAD_QUERIES = (
    "timeoutSeconds=-x",
    "timeoutSeconds=1.5",
    "limit=x",
    "limit=1_000",
    "limit=1e3",
    "limit=99999999999999999999",
    "watch=maybe",
    "allowWatchBookmarks=x",
    "sendInitialEvents=perhaps",
    "resourceVersion=abc",
    "resourceVersionMatch=Bogus",  # ListOptions validation: 422
    "resourceVersionMatch=Exact",  # without a resourceVersion: 422
    "labelSelector=%28%28%28",
    "labelSelector=a%20b%20c",
    "fieldSelector=metadata.name",
    "fieldSelector=spec.unknown%3Dx",
)


def bad_queries() -> Iterator[Case]:
    for res in RESOURCES:
        for query in BAD_QUERIES:
            codes = frozenset((422,)) if query.startswith("resourceVersionMatch") else frozenset((400,))
            yield Case(f"list ?{query}", "GET", f"{res.collection}?{query}", codes)
        yield Case(
            "delete ?gracePeriodSeconds=x",
            "DELETE",
            res.item + "?gracePeriodSeconds=x",
            frozenset((400,)),
            unchanged=res.item,
        )
        yield Case(
            "delete ?propagationPolicy=Never",
            "DELETE",
            res.item + "?propagationPolicy=Never",
            frozenset((400, 422)),
            unchanged=res.item,
        )
        yield Case(
            "create ?dryRun=Maybe",
            "POST",
            res.collection + "?dryRun=Maybe",
            frozenset((422,)),
            _dumps(_with(res.valid, ("metadata", "name"), "fresh")),
            absent=f"{res.collection}/fresh",
        )
        yield Case(
            "create ?fieldValidation=Loose",
            "POST",
            res.collection + "?fieldValidation=Loose",
            frozenset((400,)),
            _dumps(_with(res.valid, ("metadata", "name"), "fresh")),
            absent=f"{res.collection}/fresh",
        )
        yield Case(
            "merge patch ?force=true",
            "PATCH",
            res.item + "?force=true",
            frozenset((422,)),
            b"{}",
            MERGE,
            unchanged=res.item,
        )
        yield Case(
            "apply without fieldManager",
            "PATCH",
            res.item,
            frozenset((422,)),
            _dumps(res.valid),
            APPLY,
            unchanged=res.item,
        )
        # a list or get at a resourceVersion the store has not reached (a watch from one waits for it, as upstream)
        yield Case(
            "list at a future resourceVersion",
            "GET",
            res.collection + "?resourceVersion=999999999",
            frozenset((504,)),
        )
        yield Case(
            "get at a future resourceVersion",
            "GET",
            res.item + "?resourceVersion=999999999",
            frozenset((504,)),
        )


BAD_BODIES = (
    b"{",
    b"[1,2",
    b'"x"',
    b"[]",
    b"null",
    b"42",
    b"\xff\xfe",
    b'{"metadata": []}',
    b'{"metadata": {"name": 5}}',
    b'{"kind": "Secret"}',
    b'{"apiVersion": "v9"}',
)
BAD_PATCHES = (
    b"{",
    b'"x"',
    b"[{}]",
    b'[{"op": "bogus", "path": "/a"}]',
    b'[{"op": "remove", "path": "/nope"}]',
    b'[{"op": "test", "path": "/metadata/name", "value": "other"}]',
)


def bad_bodies() -> Iterator[Case]:
    for res in RESOURCES:
        fresh = f"{res.collection}/fresh"
        for body in BAD_BODIES:
            yield Case(f"create {body[:20]!r}", "POST", res.collection, frozenset((400,)), body, absent=fresh)
            yield Case(f"update {body[:20]!r}", "PUT", res.item, frozenset((400,)), body, unchanged=res.item)
        for content_type in ("text/plain", "application/xml", "application/vnd.kubernetes.protobuf"):
            yield Case(
                f"create as {content_type}",
                "POST",
                res.collection,
                frozenset((400, 415)),
                _dumps(res.valid),
                content_type,
                absent=fresh,
            )
        yield Case(
            "patch as application/json",
            "PATCH",
            res.item,
            frozenset((415,)),
            b"{}",
            "application/json",
            unchanged=res.item,
        )
        if res.custom:
            yield Case(
                "strategic merge patch of a custom resource",
                "PATCH",
                res.item,
                frozenset((415,)),
                b"{}",
                STRATEGIC,
                unchanged=res.item,
            )
        for body in BAD_PATCHES:
            patch_type = JSON_PATCH if body.startswith(b"[") else MERGE
            yield Case(
                f"patch {body[:30]!r}",
                "PATCH",
                res.item,
                frozenset((400, 422)),
                body,
                patch_type,
                unchanged=res.item,
            )
        big = _dumps(_with(res.valid, ("metadata", "annotations"), {"big": "x" * (70 * 1024)}))
        yield Case("create past the body limit", "POST", res.collection, frozenset((413,)), big, absent=fresh)
        yield Case("update past the body limit", "PUT", res.item, frozenset((413,)), big, unchanged=res.item)
        yield Case(
            "create of an existing name",
            "POST",
            res.collection,
            frozenset((409,)),
            _dumps(res.valid),
            unchanged=res.item,
        )
        stale = _with(res.valid, ("metadata", "resourceVersion"), "1")
        yield Case(
            "update at a stale resourceVersion",
            "PUT",
            res.item,
            frozenset((409,)),
            _dumps(stale),
            unchanged=res.item,
        )
        other = _with(res.valid, ("metadata", "name"), "other")
        yield Case(
            "update naming another object",
            "PUT",
            res.item,
            frozenset((400,)),
            _dumps(other),
            unchanged=res.item,
        )
        for method in ("GET", "PUT", "PATCH", "DELETE"):
            body = (
                _dumps(_with(res.valid, ("metadata", "name"), "missing"))
                if method == "PUT"
                else b"{}"
                if method == "PATCH"
                else b""
            )
            yield Case(
                f"{method} of a missing object",
                method,
                f"{res.collection}/missing",
                frozenset((404,)),
                body,
                MERGE if method == "PATCH" else "application/json",
                absent=f"{res.collection}/missing",
            )


def all_cases() -> list[Case]:
    return [*wrong_types(), *deep_nesting(), *bad_queries(), *bad_bodies()]
