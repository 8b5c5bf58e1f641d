"""The Kubernetes JSONPath dialect (k8s.io/client-go/util/jsonpath), evaluated over decoded JSON as
kube-apiserver evaluates CRD additionalPrinterColumns (with missing keys allowed).

Why not a library: no maintained Python package implements this dialect. jsonpath-ng, python-jsonpath and
the RFC 9535 implementations differ where columns notice: their filters coerce between integers and floats
(upstream compares with Go template semantics, where `1 == 1.0` is an error), treat missing keys and `..`
differently, and print values Python's way (upstream prints maps and lists as compact Go JSON, floats as
Go's %v). Values keep Go's kinds: a Python int is a JSON integer (int64), a float a JSON number with a
fraction (float64), None a JSON null.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

import orjson

from kubesim.resources.jsonpath_parse import (
    Action,
    Field,
    Filter,
    Identifier,
    JSONPathError,
    Literal,
    Node,
    Recursive,
    Slice,
    Union,
    Wildcard,
    parse_template,
)

__all__ = ["JSONPathError", "find_results", "format_value", "parse_template"]


def find_results(template: list[Action | str], data: Any) -> list[list[Any]]:
    """One result list per template part, as FindResults returns them; raises JSONPathError where it errs."""
    return [[part] if isinstance(part, str) else _walk_all([data], part) for part in template]


def format_value(value: Any) -> str:
    """One result as PrintResults writes it: maps and lists as compact JSON, scalars as Go's fmt.Print."""
    if isinstance(value, dict | list):
        text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
        # encoding/json escapes HTML-significant characters (and U+2028/9) that orjson leaves alone
        for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
            text = text.replace(raw, escaped)
        return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    if value is None:
        return "<no value>"  # text/template's rendering of an invalid (nil) value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return go_float(value)
    return str(value)


def go_float(value: float) -> str:
    """fmt's %v of a float64: shortest digits, exponent form when the exponent is < -4 or >= 21."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1, value) < 0 else "0"
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits))
    point = exponent + len(text) - 1  # the decimal exponent in scientific form
    prefix = "-" if sign else ""
    if point < -4 or point >= 21:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        return f"{prefix}{mantissa}e{'-' if point < 0 else '+'}{abs(point):02d}"
    if exponent >= 0:
        return prefix + text + "0" * exponent
    if point >= 0:
        return f"{prefix}{text[: point + 1]}.{text[point + 1 :]}"
    return f"{prefix}0.{'0' * (-point - 1)}{text}"


def _walk_all(values: list[Any], nodes: Action) -> list[Any]:
    for node in nodes:
        values = _walk(values, node)
    return values


def _children(value: Any) -> list[Any] | None:
    """Map values in key order (Go's fmtsort) or list items; None for anything not iterable."""
    if isinstance(value, dict):
        return [value[key] for key in sorted(value)]
    if isinstance(value, list):
        return list(value)
    return None


def _walk(values: list[Any], node: Node) -> list[Any]:
    if isinstance(node, Field):
        # a present key holding null is a result; a null container is skipped; a missing key is no result
        return [v[node.name] for v in values if isinstance(v, dict) and node.name in v]
    if isinstance(node, Wildcard):
        return [child for v in values for child in (_children(v) or [])]
    if isinstance(node, Recursive):
        return _recursive(values)
    if isinstance(node, Slice):
        return _slice(values, node)
    if isinstance(node, Filter):
        return _filter(values, node)
    if isinstance(node, Union):
        return [found for branch in node.branches for found in _walk_all(values, branch)]
    if isinstance(node, Literal):
        return [node.value] if isinstance(node.value, str) else [node.value for _ in values]
    assert isinstance(node, Identifier)
    raise JSONPathError(f"unrecognized identifier {node.name}")


def _recursive(values: list[Any]) -> list[Any]:
    found: list[Any] = []
    for value in values:
        children = _children(value)
        if children:
            found.append(value)
            found.extend(_recursive(children))
    return found


def _slice(values: list[Any], node: Slice) -> list[Any]:
    found: list[Any] = []
    for value in values:
        if value is None:
            continue
        if not isinstance(value, list):
            raise JSONPathError(f"{_go_type(value)} is not array or slice")
        length = len(value)
        start = node.start or 0
        start += length if start < 0 else 0
        end = length if node.end is None else node.end
        if end < 0 or (end == 0 and node.derived):
            end += length
        if start == end:
            return found  # upstream stops at an empty selection, dropping any further input
        if not 0 <= start < length:
            raise JSONPathError(f"array index out of bounds: index {start}, length {length}")
        if not 0 <= end <= length:
            raise JSONPathError(f"array index out of bounds: index {end - 1}, length {length}")
        if start > end:
            raise JSONPathError(f"starting index {start} is greater than ending index {end}")
        step = 1 if node.step is None else node.step
        if step <= 0:
            raise JSONPathError("step must be > 0")
        found.extend(value[start:end:step])
    return found


def _filter(values: list[Any], node: Filter) -> list[Any]:
    found: list[Any] = []
    for value in values:
        if not isinstance(value, list):
            raise JSONPathError(f"{value} is not array or slice and cannot be filtered")
        for item in value:
            lefts = _walk_all([item], node.left)
            if node.op == "exists":
                if lefts:
                    found.append(item)
                continue
            if not lefts:
                continue
            rights = _walk_all([item], node.right)
            if len(lefts) > 1 or len(rights) > 1:
                raise JSONPathError("can only compare one element at a time")
            if rights and _compare(node.op, lefts[0], rights[0]):
                found.append(item)
    return found


def _kind(value: Any) -> str:
    """text/template's basic kinds; anything else cannot be compared."""
    for kind, types in (("bool", bool), ("int", int), ("float", float), ("string", str)):
        if isinstance(value, types):
            return kind
    raise JSONPathError("invalid type for comparison")


def _compare(op: str, left: Any, right: Any) -> bool:
    """The forked text/template eq/ne/lt/le/gt/ge: both sides of one kind, no int/float mixing."""
    if op not in ("==", "!=", "<", ">", "<=", ">="):
        raise JSONPathError(f"unrecognized filter operator {op}")
    kind = _kind(left)
    if _kind(right) != kind:
        raise JSONPathError("incompatible types for comparison")
    if op in ("==", "!="):
        return bool(left == right) == (op == "==")
    if kind == "bool":
        raise JSONPathError("invalid type for comparison")
    if op == "<":
        return bool(left < right)
    if op == ">":
        return bool(left > right)
    if op == "<=":
        return bool(left <= right)
    return bool(left >= right)


def _go_type(value: Any) -> str:
    if isinstance(value, dict):
        return "map[string]interface {}"
    kinds = {bool: "bool", int: "int64", float: "float64", str: "string"}
    return kinds.get(type(value), "interface {}")
