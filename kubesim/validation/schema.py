"""Custom resources validated against their CRD's openAPIV3Schema, with the apiserver's messages (kube-openapi
validation errors mapped to field errors): type, required, enum, minimum/maximum (exclusive too),
minLength/maxLength, pattern, minItems/maxItems, minProperties/maxProperties, nullable,
x-kubernetes-int-or-string. `metadata` is left to the metadata rules. Not evaluated: CEL rules
(x-kubernetes-validations), formats, oneOf/anyOf/allOf/not, list-type uniqueness."""

from __future__ import annotations

import re
from typing import Any

from kubesim.validation.common import JSON, Causes, go_repr, not_supported, required

_JSON_TYPES = (
    ("boolean", bool),
    ("integer", int),
    ("number", float),
    ("string", str),
    ("array", list),
    ("object", dict),
)


_EXACT_TYPES = {python_type: name for name, python_type in _JSON_TYPES}  # as JSON decodes: one look-up
_INT_OR_STRING = (int, str)
_NUMBER = (int, float)
# what `_validate` checks of a scalar besides its type: a node with none of these takes any value of its type
_SCALAR_RULES = frozenset(
    ("x-kubernetes-int-or-string", "enum", "minimum", "maximum", "minLength", "maxLength", "pattern")
)
_PLAIN = {"string": str, "boolean": bool, "integer": int}
# what `_validate` checks of an object besides its type and its fields
_OBJECT_RULES = frozenset(
    ("x-kubernetes-int-or-string", "enum", "required", "minProperties", "maxProperties")
)


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    exact = _EXACT_TYPES.get(type(value))
    if exact is not None:
        return exact
    for name, python_type in _JSON_TYPES:
        if isinstance(value, python_type):
            return name
    return "unknown"


def _type_ok(value: Any, expected: str) -> bool:
    actual = json_type(value)
    return (
        actual == expected
        or (expected == "number" and actual == "integer")
        or (expected == "integer" and isinstance(value, float) and value.is_integer())
    )


def _invalid(field: str, value: Any, detail: str, reason: str = "FieldValueInvalid") -> JSON:
    return {"reason": reason, "message": f"Invalid value: {go_repr(value)}: {detail}", "field": field}


def _too_long(field: str, longest: int) -> JSON:
    return {
        "reason": "FieldValueTooLong",
        "field": field,
        "message": f"Too long: may not be longer than {longest}",
    }


def _too_many(field: str, count: int, most: int) -> JSON:
    return {
        "reason": "FieldValueTooMany",
        "field": field,
        "message": f"Too many: {count}: must have at most {most} items",
    }


def _number(value: float) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def validate_custom(obj: JSON, schema: JSON) -> Causes:
    """Causes for a custom resource (everything but apiVersion, kind and metadata)."""
    causes: Causes = []
    properties = schema.get("properties") or {}
    for key in schema.get("required") or []:
        if key not in obj and key not in ("apiVersion", "kind", "metadata"):
            causes.append(required(key))
    for key, value in obj.items():
        if key in ("apiVersion", "kind", "metadata") or key not in properties:
            continue
        causes += _validate(value, properties[key], key)
    return causes


def _validate(value: Any, node: JSON, path: str) -> Causes:
    declared = node.get("type")
    if (
        declared.__class__ is str
        and _PLAIN.get(declared) is type(value)
        and node.keys().isdisjoint(_SCALAR_RULES)
    ):
        return []  # a string, boolean or integer of its declared type where nothing else is asked of it
    if declared == "object" and value.__class__ is dict and node.keys().isdisjoint(_OBJECT_RULES):
        return _fields(value, node, path)  # an object where nothing but its fields' rules are asked
    if value is None:
        if node.get("nullable") or (node.get("x-kubernetes-preserve-unknown-fields") and "type" not in node):
            return []
        if "type" in node:
            return [
                _invalid(
                    path,
                    "null",
                    f'{path} in body must be of type {node["type"]}: "null"',
                    "FieldValueTypeInvalid",
                )
            ]
        return []
    if node.get("x-kubernetes-int-or-string"):
        if not isinstance(value, _INT_OR_STRING) or isinstance(value, bool):
            return [
                _invalid(
                    path,
                    json_type(value),
                    f'{path} in body must be of type integer,string: "{json_type(value)}"',
                    "FieldValueTypeInvalid",
                )
            ]
    elif "type" in node and not _type_ok(value, node["type"]):
        return [
            _invalid(
                path,
                json_type(value),
                f'{path} in body must be of type {node["type"]}: "{json_type(value)}"',
                "FieldValueTypeInvalid",
            )
        ]
    causes: Causes = []
    if "enum" in node and value not in node["enum"]:
        causes.append(
            not_supported(path, value, [v if isinstance(v, str) else go_repr(v) for v in node["enum"]])
        )
    if isinstance(value, _NUMBER) and not isinstance(value, bool):
        causes += _bounds(value, node, path)
    if isinstance(value, str):
        causes += _string(value, node, path)
    if isinstance(value, list):
        causes += _array(value, node, path)
    if isinstance(value, dict):
        causes += _object(value, node, path)
    return causes


def _bounds(value: float, node: JSON, path: str) -> Causes:
    causes: Causes = []
    low, high = node.get("minimum"), node.get("maximum")
    if low is not None:
        if node.get("exclusiveMinimum") and value <= low:
            causes.append(_invalid(path, value, f"{path} in body should be greater than {_number(low)}"))
        elif value < low:
            causes.append(
                _invalid(path, value, f"{path} in body should be greater than or equal to {_number(low)}")
            )
    if high is not None:
        if node.get("exclusiveMaximum") and value >= high:
            causes.append(_invalid(path, value, f"{path} in body should be less than {_number(high)}"))
        elif value > high:
            causes.append(
                _invalid(path, value, f"{path} in body should be less than or equal to {_number(high)}")
            )
    return causes


def _string(value: str, node: JSON, path: str) -> Causes:
    causes: Causes = []
    if (shortest := node.get("minLength")) is not None and len(value) < shortest:
        causes.append(_invalid(path, value, f"{path} in body should be at least {shortest} chars long"))
    if (longest := node.get("maxLength")) is not None and len(value) > longest:
        causes.append(_too_long(path, longest))
    pattern = node.get("pattern")
    if pattern is not None:
        try:
            matched = re.search(pattern, value) is not None
        except re.error:
            matched = True
        if not matched:
            causes.append(_invalid(path, value, f"{path} in body should match '{pattern}'"))
    return causes


def _array(value: list[Any], node: JSON, path: str) -> Causes:
    causes: Causes = []
    if (fewest := node.get("minItems")) is not None and len(value) < fewest:
        causes.append(_invalid(path, len(value), f"{path} in body should have at least {fewest} items"))
    if (most := node.get("maxItems")) is not None and len(value) > most:
        causes.append(_too_many(path, len(value), most))
    element = node.get("items")
    if isinstance(element, dict):
        for i, item in enumerate(value):
            causes += _validate(item, element, f"{path}[{i}]")
    return causes


def _object(value: JSON, node: JSON, path: str) -> Causes:
    causes: Causes = []
    for key in node.get("required") or []:
        if key not in value:
            causes.append(required(f"{path}.{key}"))
    if (fewest := node.get("minProperties")) is not None and len(value) < fewest:
        causes.append(_invalid(path, len(value), f"{path} in body should have at least {fewest} properties"))
    if (most := node.get("maxProperties")) is not None and len(value) > most:
        causes.append(_too_many(path, len(value), most))
    return causes + _fields(value, node, path)


def _fields(value: JSON, node: JSON, path: str) -> Causes:
    causes: Causes = []
    properties = node.get("properties") or {}
    additional = node.get("additionalProperties")
    for key, item in value.items():
        child = properties.get(key)
        if child is None and isinstance(additional, dict):
            child = additional
        if isinstance(child, dict):
            declared = child.get("type")
            if (
                declared.__class__ is str
                and _PLAIN.get(declared) is type(item)
                and child.keys().isdisjoint(_SCALAR_RULES)
            ):
                continue  # `_validate`'s first answer, without the call and the path
            causes += _validate(item, child, f"{path}.{key}")
    return causes
