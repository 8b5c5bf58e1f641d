"""Wrongly typed fields of built-in objects, found as kube-apiserver's JSON decoding (into Go structs) finds
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
from kubesim.validation.gotime import PARSED, time_error
from kubesim.validation.quantity import quantity_error

JSON = dict[str, Any]
_INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}
_GO_SCALARS = {"integer": "int64", "number": "float64", "string": "string", "boolean": "bool"}
_SECTIONS = ValueMemo()  # a top-level section (a pod template's spec) arrives again and again


class Facts:
    """What the decoder accepts at one schema node, computed once per node."""

    __slots__ = (
        "allowed",
        "children",
        "date_time",
        "go_type",
        "int_range",
        "quick",
        "quick_range",
        "quick_time",
        "struct",
    )

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
        # a time string known to parse, an int within an int32/int64 range: what `_check` would pass too
        self.quick_time = self.date_time and "string" in self.allowed and "number" not in self.allowed
        self.quick_range = self.int_range if "number" not in self.allowed else None
        # key -> (the child's node, its facts): one dict look-up per field of an object
        self.children: dict[str, tuple[Node | None, Facts | None]] = {}


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


def facts(node: Node) -> Facts:
    """The node's facts, kept on the node (which goes, with them, when a CRD changes the schemas)."""
    found: Facts | None = node.decode_facts
    if found is None:
        found = node.decode_facts = Facts(node.schema)
    return found


def _child(node: Node, info: Facts, key: str) -> tuple[Node | None, Facts | None]:
    """`node.child(key)` and its facts, remembered per key of a declared property (map keys, unbounded,
    are not remembered)."""
    hit = info.children.get(key)
    if hit is not None:
        return hit
    child = node.child(key)
    found = (child, facts(child) if child is not None else None)
    properties = node.properties
    if properties is not None and key in properties:
        info.children[key] = found
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
    root_info = facts(root)
    known = root_info.children
    for key, value in obj.items():
        if key in ("apiVersion", "kind", "metadata") or value is None:
            continue  # metadata: `request.check_meta_types`
        child, info = known.get(key) or _child(root, root_info, key)  # the call only for a key not seen yet
        if child is None or info is None or type(value) in info.quick or _passes(value, info):
            continue
        if isinstance(value, (dict, list)) and not child.flat:
            found: str | None = _SECTIONS.get(
                child, key, value, functools.partial(_section, value, root, child, key, kind)
            )
        else:
            found = _check(value, root, child, key, kind, key)
        if found:
            return found
    return None


def _passes(value: Any, info: Facts) -> bool:
    """A scalar beyond `info.quick` that `_check` would pass at a node with these facts, told without
    walking there: a time known to parse, an integer within its range."""
    kind = type(value)
    if kind is str:
        return info.quick_time and value in PARSED
    bounds = info.quick_range
    return kind is int and bounds is not None and bounds[0] <= value <= bounds[1]


def _section(value: Any, root: Node, node: Node, key: str, kind: str) -> str:
    return _check(value, root, node, key, kind, key) or ""  # "": remembered as valid (None is never a hit)


def _check(value: Any, parent: Node, node: Node, key: str | None, struct: str, path: str) -> str | None:
    info = facts(node)
    if type(value) in info.quick:  # exact types (as JSON decodes): a subclass takes the long way
        return None
    allowed = info.allowed
    if allowed and not (value.__class__ is dict and "object" in allowed):  # an object where one goes: fine
        kind = _json_kind(value)
        if kind not in allowed and not (kind == "integer" and "number" in allowed):
            if kind == "number" and "integer" in allowed:
                return _message(f"number {value!r}", struct, path, _field_type(parent, key, info))
            return _message(_go_value(value, kind), struct, path, _field_type(parent, key, info))
        if kind == "string" and "number" in allowed and _field_type(parent, key, info) == "resource.Quantity":
            return quantity_error(value)  # its own UnmarshalJSON: ParseQuantity's error, no "json: " prefix
        if kind == "string" and info.date_time:  # metav1.Time's UnmarshalJSON: time.Parse's error
            wrong = time_error(value)  # None (the common case) whatever the field's Go type
            return wrong if wrong is not None and _field_type(parent, key, info) == "v1.Time" else None
        if kind == "integer" and info.int_range is not None and "number" not in allowed:
            low, high = info.int_range
            if not low <= value <= high:
                return _message(f"number {value}", struct, path, _field_type(parent, key, info))
    if isinstance(value, dict):
        if node.properties is None and not isinstance(node.additional, dict):
            return None  # free-form
        inner: str | None = None  # named only when a field needs a look below (it words the errors)
        known = info.children
        for child_key, child_value in value.items():
            if child_value is None:
                continue
            child, child_info = known.get(child_key) or _child(node, info, child_key)
            if (
                child is not None
                and child_info is not None
                and type(child_value) not in child_info.quick
                and not _passes(child_value, child_info)
            ):
                if inner is None:
                    inner = _struct_name(parent, key, struct)
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
