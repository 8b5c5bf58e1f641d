"""The per-write walks over an object (decode types, unknown fields, a create's managedFields) give exactly
what they gave before they were made cheaper: their results on many varied objects, valid and not, are
compared with frozen copies of the 64be36a implementations (tests/unit/kubesim/validation/reference/)."""

from __future__ import annotations

import copy
import functools
import importlib.util
import random
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson
import pytest

from kubesim.admission import defaults
from kubesim.merge import apply, fieldset
from kubesim.schema import schemas
from kubesim.validation import decode_types, nesting, objects
from kubesim.validation.meta_types import meta_type_error
from kubesim.validation.schema import validate_custom

REFERENCE = Path(__file__).parent / "reference"
GREETING = ("example.com", "v1", "Greeting")
WIDGET = ("example.com", "v1", "Widget")
DEFAULTED = ("example.com", "v1", "Defaulted")
RULED = ("example.com", "v1", "Ruled")
CUSTOM_SCHEMAS = {
    RULED: {
        "type": "object",
        "required": ["spec"],
        "properties": {
            "spec": {
                "type": "object",
                "required": ["name"],
                "minProperties": 2,
                "maxProperties": 15,
                "properties": {
                    "name": {"type": "string", "minLength": 2, "maxLength": 8, "pattern": "^[a-z]+$"},
                    "plain": {"type": "string"},
                    "flag": {"type": "boolean"},
                    "count": {"type": "integer", "minimum": 1, "maximum": 5, "exclusiveMaximum": True},
                    "ratio": {"type": "number", "minimum": 0, "exclusiveMinimum": True},
                    "whole": {"type": "integer"},
                    "cap": {"type": "integer", "maximum": 3},
                    "short": {"type": "string", "maxLength": 2},
                    "mode": {"type": "string", "enum": ["a", "b"]},
                    "maybe": {"type": "string", "nullable": True},
                    "port": {"x-kubernetes-int-or-string": True},
                    "tags": {"type": "array", "minItems": 1, "maxItems": 2, "items": {"type": "string"}},
                    "labels": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 3}},
                    "free": {"x-kubernetes-preserve-unknown-fields": True},
                },
            },
        },
    },
    DEFAULTED: {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "size": {"type": "integer", "default": 3},
                    "mode": {"type": "string", "nullable": True, "default": "fast"},
                    "ports": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {"protocol": {"type": "string", "default": "TCP"}},
                        },
                    },
                },
            },
            "extra": {"type": "object", "default": {"a": 1}},
        },
    },
    GREETING: {
        "type": "object",
        "properties": {
            "spec": {"type": "object", "properties": {"message": {"type": "string"}}},
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
    },
    WIDGET: {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                    "items": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["id"],
                        "items": {
                            "type": "object",
                            "properties": {"id": {"type": "string"}, "v": {"type": "object"}},
                        },
                    },
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                    "size": {
                        "x-kubernetes-int-or-string": True,
                        "anyOf": [{"type": "integer"}, {"type": "string"}],
                    },
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                },
            },
            "flat": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}},
            "embedded": {"type": "object", "x-kubernetes-embedded-resource": True, "properties": {}},
        },
    },
}
OWNER = {
    "apiVersion": "example.com/v1",
    "kind": "Greeting",
    "name": "g",
    "uid": "u-1",
    "controller": True,
    "blockOwnerDeletion": True,
}
SAMPLES: list[tuple[tuple[str, str, str], dict[str, Any]]] = [
    (
        ("", "v1", "ConfigMap"),
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "g-greeting", "namespace": "bench", "ownerReferences": [OWNER]},
            "data": {"message": "hello"},
            "binaryData": {"b": "aGk="},
        },
    ),
    (
        ("", "v1", "Event"),
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "g.1", "namespace": "bench"},
            "involvedObject": {"kind": "Greeting", "name": "g", "uid": "u", "resourceVersion": "12"},
            "reason": "Greeted",
            "message": "hi",
            "source": {"component": "c", "host": "h"},
            "firstTimestamp": "2026-12-06T00:00:00Z",
            "lastTimestamp": "2026-12-06T00:00:01Z",
            "eventTime": "2026-12-06T00:00:01.000000Z",
            "series": {"count": 2, "lastObservedTime": "2026-12-06T00:00:01.000000Z"},
            "count": 1,
            "type": "Normal",
        },
    ),
    (
        ("apps", "v1", "Deployment"),
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "d", "labels": {"a": "b"}},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"a": "b"}},
                "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
                "template": {
                    "metadata": {"labels": {"a": "b"}},
                    "spec": {
                        "containers": [
                            {
                                "name": "c",
                                "image": "i",
                                "ports": [{"containerPort": 80, "protocol": "TCP"}],
                                "env": [{"name": "A", "value": "1"}],
                                "resources": {"limits": {"cpu": "1", "memory": "1Gi"}},
                            }
                        ],
                        "terminationGracePeriodSeconds": 30,
                    },
                },
            },
            "status": {"replicas": 1, "conditions": [{"type": "Available", "status": "True"}]},
        },
    ),
    (
        ("batch", "v1", "Job"),
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "j"},
            "spec": {
                "completions": 1,
                "activeDeadlineSeconds": 60,
                "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}},
            },
            "status": {"startTime": "2026-12-06T00:00:00Z", "active": 1},
        },
    ),
    (
        GREETING,
        {
            "apiVersion": "example.com/v1",
            "kind": "Greeting",
            "metadata": {
                "name": "g",
                "namespace": "bench",
                "managedFields": [{"manager": "m", "fieldsV1": {}}],
            },
            "spec": {"message": "hello"},
            "status": {"ready": True, "deep": {"x": [1]}},
        },
    ),
    (
        WIDGET,
        {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": "w", "namespace": "default"},
            "spec": {
                "tags": ["a", "b"],
                "items": [{"id": "1", "v": {"q": 1}}, {"id": "2"}],
                "free": {"x": {"y": 1}},
                "size": 3,
                "labels": {"a": "b"},
            },
            "flat": {"a": "x", "b": 2},
            "embedded": {"apiVersion": "v1", "kind": "K", "metadata": {"name": "e"}},
        },
    ),
    (
        DEFAULTED,
        {
            "apiVersion": "example.com/v1",
            "kind": "Defaulted",
            "metadata": {"name": "d"},
            "spec": {"mode": None, "ports": [{"name": "p"}, {"protocol": "UDP"}]},
        },
    ),
    (
        RULED,
        {
            "apiVersion": "example.com/v1",
            "kind": "Ruled",
            "metadata": {"name": "r"},
            "spec": {
                "name": "abc",
                "plain": "p",
                "flag": True,
                "count": 2,
                "ratio": 0.5,
                "whole": 7,
                "cap": 2,
                "short": "ab",
                "mode": "a",
                "maybe": None,
                "port": "http",
                "tags": ["t"],
                "labels": {"a": "b"},
                "free": {"x": [1]},
            },
        },
    ),
    (
        ("", "v1", "Service"),
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "s"},
            "spec": {"selector": {"a": "b"}, "ports": [{"port": 80, "targetPort": "http"}]},
        },
    ),
]
ODD_VALUES: list[Any] = [
    "text",
    "12",
    "garbage-time",
    "2026-13-01T00:00:00Z",
    "1.5Gi",
    "1e3",
    "nonsense-quantity",
    7,
    -1,
    2**31,
    2**63,
    1.5,
    True,
    False,
    None,
    [],
    ["x"],
    [{"name": "n"}],
    {},
    {"unknownField": 1},
    {"name": "n", "value": 3},
]


@functools.cache
def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"reference_{name}", REFERENCE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _places(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value in the object (the root excluded)."""
    found = [path] if path else []
    if isinstance(value, dict):
        for key, child in value.items():
            found += _places(child, (*path, key))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            found += _places(child, (*path, i))
    return found


def _mutants(obj: dict[str, Any], rng: random.Random, count: int) -> list[dict[str, Any]]:
    """The object with one to three values replaced by odd ones, or unknown keys added."""
    result = [copy.deepcopy(obj)]
    for _ in range(count):
        mutant = copy.deepcopy(obj)
        for _ in range(rng.randint(1, 3)):
            path = rng.choice(_places(mutant))
            parent = mutant
            for step in path[:-1]:
                parent = parent[step]
            if isinstance(parent, dict) and rng.random() < 0.2:
                parent[f"extra{rng.randint(0, 3)}"] = copy.deepcopy(rng.choice(ODD_VALUES))
            else:
                parent[path[-1]] = copy.deepcopy(rng.choice(ODD_VALUES))
        result.append(mutant)
    return result


def _cases(seed: int, count: int) -> list[tuple[tuple[str, str, str], dict[str, Any]]]:
    rng = random.Random(seed)
    return [(gvk, mutant) for gvk, obj in SAMPLES for mutant in _mutants(obj, rng, count)]


@pytest.fixture(autouse=True)
def _custom_schemas_and_fresh_memos() -> Iterator[None]:
    """The custom kinds registered; memo tables start empty, so that both implementations walk (a memo hit
    would hide a difference)."""
    for gvk, schema in CUSTOM_SCHEMAS.items():
        schemas.register_crd_schema(gvk, copy.deepcopy(schema))
    for table in schemas.memo_tables:
        table.clear()
    yield
    for gvk in CUSTOM_SCHEMAS:
        schemas.unregister_crd_schema(gvk)


@pytest.mark.parametrize("seed", range(4))
def test_decode_type_errors_unchanged(seed: int) -> None:
    reference = _load("decode_types_64be36a")
    cases = _cases(seed, 150)
    errors = 0
    for gvk, obj in cases:
        before = copy.deepcopy(obj)
        expected = reference.type_error(gvk, obj)
        assert decode_types.type_error(gvk, obj) == expected, (gvk, obj)
        assert obj == before
        errors += expected is not None
    assert errors > len(cases) // 4  # the mutants do reach the error paths


@pytest.mark.parametrize("seed", range(4))
def test_unknown_fields_unchanged(seed: int) -> None:
    reference = _load("objects_64be36a")
    cases = _cases(seed, 150)
    found = 0
    for gvk, obj in cases:
        before = copy.deepcopy(obj)
        expected = reference.unknown_fields(gvk, obj)
        for _ in range(2):  # the second time from the memo, where a section is memoised
            assert objects.unknown_fields(gvk, obj) == expected, (gvk, obj)
        assert obj == before
        found += bool(expected)
    assert found > len(cases) // 10


@pytest.mark.parametrize("seed", range(4))
def test_create_managed_fields_unchanged(seed: int) -> None:
    reference = _load("fieldset_64be36a")
    skip = ("apiVersion", "kind", "status")
    for gvk, obj in _cases(seed, 150):
        before = copy.deepcopy(obj)
        custom = schemas.is_custom(gvk)
        expected = reference.added_sections(obj, schemas.root(gvk), custom=custom, skip=skip)
        for _ in range(2):
            tree = fieldset.added_sections(obj, schemas.root(gvk), custom=custom, skip=skip)
            assert orjson.dumps(tree) == orjson.dumps(expected), (gvk, obj)  # key order too
        assert obj == before


def _tree(rng: random.Random, depth: int) -> Any:
    """A random JSON-ish value: nested containers, strings holding brackets, now and then a non-JSON key."""
    pick = rng.random()
    if depth <= 0 or pick < 0.25:
        return rng.choice(["x", "[{", "}]", 1, 2.5, True, None, "{[[{"])
    if pick < 0.6:
        return [_tree(rng, depth - 1) for _ in range(rng.randint(0, 3))]
    tree: dict[Any, Any] = {f"k{i}": _tree(rng, depth - 1) for i in range(rng.randint(0, 3))}
    if rng.random() < 0.05:
        tree[7] = "int key"  # YAML can decode one; orjson refuses it
    return tree


@pytest.mark.parametrize("seed", range(4))
def test_depth_check_unchanged(seed: int) -> None:
    reference = _load("nesting_64be36a")
    rng = random.Random(seed)
    deep = 0
    for _ in range(1500):
        value = _tree(rng, rng.randint(1, 9))
        for limit in (2, 3, 4, 5, 6, 8):
            expected = reference.deeper_than(value, limit)
            assert nesting.deeper_than(value, limit) == expected, (value, limit)
            deep += expected
    assert deep > 1000  # both answers are common


@pytest.mark.parametrize("seed", range(4))
def test_custom_resource_defaults_unchanged(seed: int) -> None:
    reference = _load("defaults_64be36a")
    changed = 0
    for gvk, obj in _cases(seed, 150):
        if not schemas.is_custom(gvk):
            continue
        resource = f"{gvk[2].lower()}s.{gvk[0]}"
        expected, result = copy.deepcopy(obj), copy.deepcopy(obj)
        reference.apply_defaults(resource, expected)
        defaults.apply_defaults(resource, result)
        assert orjson.dumps(result) == orjson.dumps(expected), (gvk, obj)  # key order too
        changed += expected != obj
    assert changed > 100  # the defaulted kind does get defaults


ODD_MANAGED_FIELDS: list[Any] = [
    [{"manager": "c", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {}}],
    [{"manager": "c", "fieldsV1": {"f:status": {".": {}}}}, {"manager": "", "fieldsV1": None}],
    [{"manager": "c", "fieldsV1": {"f:spec": "x"}}, {"manager": "d", "fieldsV1": {".": {}}}],
    [{"manager": "c", "fieldsV1": {"f:metadata": {"f:labels": {"f:a": {}}}, "f:status": {"f:ready": {}}}}],
    [{"manager": "a", "operation": "Update", "apiVersion": "v1", "fieldsV1": {"f:spec": {"f:x": {}}}}],
    [{"manager": "e", "fieldsV1": "text"}, {"manager": "f", "fieldsV1": {"f:a": "x", ".": {}}}],
    "not a list",
]


@pytest.mark.parametrize("seed", range(4))
def test_update_managed_fields_unchanged(seed: int) -> None:
    """A write's managedFields (record_update) as before, the entries of other managers decoded lazily."""
    reference = _load("apply_64be36a")
    rng = random.Random(seed)
    compared = 0
    for gvk, obj in _cases(seed, 60):
        if not isinstance(obj.get("metadata"), dict):
            continue
        old = copy.deepcopy(obj)
        old["metadata"].pop("managedFields", None)
        reference.record_update(None, old, "a", gvk, None, now="2026-12-06T00:00:00Z")
        if rng.random() < 0.5:  # a second writer's entry, of the status or of the main resource
            second = copy.deepcopy(old)
            second["status"] = {"ready": True, "n": rng.randint(0, 2)}
            second.setdefault("spec", {})
            if isinstance(second["spec"], dict):
                second["spec"]["more"] = 1
            reference.record_update(
                old, second, "b", gvk, rng.choice([None, "status"]), now="2026-12-06T00:00:01Z"
            )
            old = second
        for _ in range(3):
            new = rng.choice(_mutants(old, rng, 1))
            if not isinstance(new.get("metadata"), dict):
                continue
            if rng.random() < 0.3:
                new["metadata"]["managedFields"] = copy.deepcopy(rng.choice(ODD_MANAGED_FIELDS))
            manager = rng.choice(["a", "b", "c"])
            sub = rng.choice([None, "status"])
            expected, result = copy.deepcopy(new), copy.deepcopy(new)
            stamp = "2026-12-06T00:00:02Z"
            try:
                reference.record_update(old, expected, manager, gvk, sub, now=stamp)
            except Exception as exc:  # an odd managedFields list the reference cannot take either
                with pytest.raises(type(exc)):
                    apply.record_update(old, result, manager, gvk, sub, now=stamp)
                continue
            apply.record_update(old, result, manager, gvk, sub, now=stamp)
            assert orjson.dumps(result) == orjson.dumps(expected), (gvk, old, new, manager, sub)
            compared += 1
    assert compared > 400


@pytest.mark.parametrize("seed", range(4))
def test_custom_resource_validation_unchanged(seed: int) -> None:
    reference = _load("schema_64be36a")
    compared = invalid = 0
    for gvk, obj in _cases(seed, 150):
        root = schemas.root(gvk)
        if not schemas.is_custom(gvk) or root is None:
            continue
        expected = reference.validate_custom(obj, root)
        assert validate_custom(obj, root) == expected, (gvk, obj)
        compared += 1
        invalid += bool(expected)
    assert compared > 500 and invalid > 100


RICH_METADATA = {
    "name": "n",
    "generateName": "n-",
    "namespace": "ns",
    "uid": "u",
    "resourceVersion": "5",
    "generation": 2,
    "deletionGracePeriodSeconds": 30,
    "creationTimestamp": "2026-12-06T00:00:00Z",
    "deletionTimestamp": "2026-12-06T00:00:09Z",
    "labels": {"a": "b", "c": None},
    "annotations": {"x": "y"},
    "finalizers": ["f", None],
    "ownerReferences": [OWNER, None],
    "managedFields": [
        {
            "manager": "m",
            "operation": "Update",
            "apiVersion": "v1",
            "time": "2026-12-06T00:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {}},
            "subresource": "status",
        }
    ],
    "clusterName": 3,
}


@pytest.mark.parametrize("seed", range(4))
def test_metadata_decode_errors_unchanged(seed: int) -> None:
    reference = _load("meta_types_64be36a")
    rng = random.Random(seed)
    samples = [{"metadata": RICH_METADATA}] + [{"metadata": obj["metadata"]} for _, obj in SAMPLES]
    errors = 0
    cases = [mutant for sample in samples for mutant in _mutants(sample, rng, 120)]
    for case in cases:
        meta = case["metadata"]
        expected = reference.meta_type_error(meta, "Kind")
        assert meta_type_error(meta, "Kind") == expected, meta
        errors += expected is not None
    assert errors > len(cases) // 4
