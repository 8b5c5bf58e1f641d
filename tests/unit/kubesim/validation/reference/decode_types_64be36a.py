"""Frozen copy of kubesim/validation/decode_types.py at 64be36a: the reference the optimised walk is compared
with (tests/unit/kubesim/validation/test_walks_unchanged.py).

Wrongly typed fields of built-in objects, found as kube-apiserver's JSON decoding (into Go structs) finds
them: a string where an int32 is declared, `1.5` or 2^31 for an int32, an object where a string is, a list
where an object is. Upstream answers 400 BadRequest with Go's `UnmarshalTypeError` text:

    Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal number 2147483648
    into Go struct field DeploymentSpec.spec.replicas of type int32

(the struct owning the field, then the field's JSON path without list indices). Driven by the OpenAPI
schema kubesim serves, not per type. `null` is always accepted (Go leaves the zero value). Custom resources
are left to their CRD's structural schema (422, `kubesim.validation.schema`)."""

from __future__ import annotations

import functools
from typing import Any

from kubesim.schema import schemas
from kubesim.schema.nodes import Node, ValueMemo, compiled
from kubesim.validation.gotime import time_error
from kubesim.validation.quantity import quantity_error

JSON = dict[str, Any]
_INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}
_GO_SCALARS = {"integer": "int64", "number": "float64", "string": "string", "boolean": "bool"}
_SECTIONS = ValueMemo()  # a top-level section (a pod template's spec) arrives again and again


class Facts:
    """What the decoder accepts at one schema node, computed once per node."""

    __slots__ = ("allowed", "date_time", "go_type", "int_range", "quick", "struct")

    def __init__(self, schema: JSON) -> None:
        self.allowed = _allowed_types(schema)  # empty: anything (free-form JSON, RawExtension)
        fmt = schema.get("format")
        self.int_range = (
            _INT_RANGES.get(str(fmt), _INT_RANGES["int64"]) if "integer" in self.allowed else None
        )
        self.go_type = _go_type(schema)
        self.date_time = schema.get("format") == "date-time"
        self.struct = ""  # Go struct name of an object node, from its definition (set by the parent)
        self.quick = _quick_types(self.allowed, self.date_time)


def _quick_types(allowed: frozenset[str], date_time: bool) -> frozenset[type]:
    """The Python types of scalars `_check` accepts at a node whatever their value: no Quantity or time to
    parse, no int32 range to check. The common case, decided by one set look-up."""
    if not allowed:
        return frozenset((str, bool, int, float))
    quick: set[type] = set()
    if "string" in allowed and "number" not in allowed and not date_time:
        quick.add(str)
    if "boolean" in allowed:
        quick.add(bool)
    if "number" in allowed:
        quick |= {int, float}
    return frozenset(quick)


def _allowed_types(schema: JSON) -> frozenset[str]:
    declared = schema.get("type")
    branches = schema.get("oneOf") or schema.get("anyOf")
    if isinstance(declared, str):
        return frozenset((declared,))
    if isinstance(declared, list):
        return frozenset(t for t in declared if t != "null")
    if isinstance(branches, list):  # IntOrString, Quantity: one of the branches' types
        found: set[str] = set()
        for branch in branches:
            found |= _allowed_types(branch) if isinstance(branch, dict) else set()
        return frozenset(found)
    return frozenset()


def _go_type(schema: JSON) -> str:
    ref = schema.get("$ref")
    if isinstance(ref, str):
        parts = ref.rsplit(".", 2)
        return ".".join(parts[-2:])  # io.k8s.api.core.v1.PodTemplateSpec → v1.PodTemplateSpec
    allowed = _allowed_types(schema)
    if "array" in allowed:
        items = schema.get("items")
        return "[]" + (_go_type(items) if isinstance(items, dict) else "interface {}")
    if "object" in allowed:
        extra = schema.get("additionalProperties")
        return "map[string]" + (_go_type(extra) if isinstance(extra, dict) else "interface {}")
    fmt = schema.get("format")
    if "integer" in allowed:
        return fmt if fmt in _INT_RANGES else "int64"
    if len(allowed) == 1:
        return _GO_SCALARS.get(next(iter(allowed)), "interface {}")
    return "interface {}"


_facts: dict[int, tuple[Node, Facts]] = {}
schemas.memo_tables.append(_facts)


def facts(node: Node) -> Facts:
    hit = _facts.get(id(node))
    if hit is not None and hit[0] is node:
        return hit[1]
    found = Facts(node.schema)
    _facts[id(node)] = (node, found)
    return found


def _raw(parent: Node, key: str | None) -> JSON | None:
    """The unresolved schema of a property (key), map value (key None with additionalProperties) or list item,
    whose `$ref` names the Go type."""
    schema = parent.schema
    if key is not None:
        properties = parent.properties
        if properties is not None and key in properties:
            raw = properties[key]
            return raw if isinstance(raw, dict) else None
        extra = schema.get("additionalProperties")
        return extra if isinstance(extra, dict) else None
    items = schema.get("items")
    return items if isinstance(items, dict) else None


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _go_value(value: Any, kind: str) -> str:
    """Go's UnmarshalTypeError.Value: the literal for a number into an int, else the JSON kind."""
    return {"boolean": "bool", "array": "array", "object": "object", "string": "string"}.get(kind, "number")


def type_error(gvk: tuple[str, str, str], obj: JSON) -> str | None:
    """The first decode error of a built-in object, or None (`decode_message` words it as the decoder)."""
    if schemas.is_custom(gvk):
        return None
    root = compiled(schemas.root(gvk))
    if root is None:
        return None
    kind = gvk[2]
    for key, value in obj.items():
        if key in ("apiVersion", "kind", "metadata") or value is None:
            continue  # metadata: `request.check_meta_types`
        child = root.child(key)
        if child is None:
            continue
        if isinstance(value, (dict, list)):
            found: str | None = _SECTIONS.get(
                child, key, value, functools.partial(_section, value, root, child, key, kind)
            )
        elif type(value) in facts(child).quick:
            continue
        else:
            found = _check(value, root, child, key, kind, key)
        if found:
            return found
    return None


def _section(value: Any, root: Node, node: Node, key: str, kind: str) -> str:
    return _check(value, root, node, key, kind, key) or ""  # "": remembered as valid (None is never a hit)


def _check(value: Any, parent: Node, node: Node, key: str | None, struct: str, path: str) -> str | None:
    info = facts(node)
    if type(value) in info.quick:  # exact types (as JSON decodes): a subclass takes the long way
        return None
    allowed = info.allowed
    if allowed:
        kind = _json_kind(value)
        if kind not in allowed and not (kind == "integer" and "number" in allowed):
            if kind == "number" and "integer" in allowed:
                return _message(f"number {value!r}", struct, path, _field_type(parent, key, info))
            return _message(_go_value(value, kind), struct, path, _field_type(parent, key, info))
        if kind == "string" and "number" in allowed and _field_type(parent, key, info) == "resource.Quantity":
            return quantity_error(value)  # its own UnmarshalJSON: ParseQuantity's error, no "json: " prefix
        if kind == "string" and info.date_time and _field_type(parent, key, info) == "v1.Time":
            return time_error(value)  # metav1.Time's UnmarshalJSON: time.Parse's error
        if kind == "integer" and info.int_range is not None and "number" not in allowed:
            low, high = info.int_range
            if not low <= value <= high:
                return _message(f"number {value}", struct, path, _field_type(parent, key, info))
    if isinstance(value, dict):
        if node.properties is None and not isinstance(node.additional, dict):
            return None  # free-form
        inner = _struct_name(parent, key, struct)
        for child_key, child_value in value.items():
            if child_value is None:
                continue
            child = node.child(child_key)
            if child is not None and type(child_value) not in facts(child).quick:
                sub = f"{path}.{child_key}" if node.properties is not None else path
                found = _check(child_value, node, child, child_key, inner, sub)
                if found:
                    return found
    elif isinstance(value, list):
        element = node.items()
        if element is not None:
            inner = _struct_name(parent, key, struct)
            for item in value:
                if item is not None:
                    found = _check(item, node, element, None, inner, path)
                    if found:
                        return found
    return None


def _struct_name(parent: Node, key: str | None, struct: str) -> str:
    """The Go struct owning the fields below: the definition this field refers to (by `$ref`)."""
    raw = _raw(parent, key)
    if raw is not None and "items" in raw and key is not None:
        raw = raw["items"] if isinstance(raw["items"], dict) else raw
    ref = raw.get("$ref") if raw is not None else None
    return ref.rsplit(".", 1)[-1] if isinstance(ref, str) else struct


def _field_type(parent: Node, key: str | None, info: Facts) -> str:
    raw = _raw(parent, key)
    return _go_type(raw) if raw is not None and "$ref" in raw else info.go_type


def _message(value: str, struct: str, path: str, go_type: str) -> str:
    return f"cannot unmarshal {value} into Go struct field {struct}.{path} of type {go_type}"


def decode_message(wrong: str) -> str:
    """A `type_error` as the decoder reports it: Go's UnmarshalTypeError has the `json: ` prefix, the error
    of a type's own UnmarshalJSON (a Quantity) does not."""
    return f"json: {wrong}" if wrong.startswith("cannot unmarshal") else wrong
