"""Server-side apply's merge of an apply configuration into the live object, and the removal of the
fields an applier gave up (list semantics from the schema, as in `kubesim.merge.fieldset`)."""

from __future__ import annotations

import copy
from typing import Any

from kubesim.merge.fieldset import JSON, FieldSet, Path, is_atomic_map, item_element, key_schema
from kubesim.schema import schemas


def merge(live: Any, applied: Any, node: JSON | None, *, custom: bool = False) -> Any:
    """Server-side apply merge of an apply configuration into the live value (both left untouched). A null
    drops the field, except at a map key of a custom resource: there the merge keeps it (structured-merge-
    diff keeps a leaf's right-hand side, and the unstructured object the null), unless the live value is a
    granular map or list with items, which a null leaves as it is (nothing to merge into it)."""
    if isinstance(applied, dict) and isinstance(live, dict) and not is_atomic_map(node):
        result = copy.deepcopy(live)
        for key, value in applied.items():
            child, is_key = key_schema(node, key)
            if value is None:
                if not (custom and is_key):
                    result.pop(key, None)
                elif not _granular_with_items(live.get(key), child):
                    result[key] = None
            elif key in live:
                result[key] = merge(live[key], value, child, custom=custom)
            else:
                result[key] = _fresh(value, child, custom)
        return result
    info = schemas.field_info(node)
    if isinstance(applied, list) and isinstance(live, list) and info.list_type in ("map", "set"):
        if info.list_type == "set":
            return copy.deepcopy(live) + [copy.deepcopy(i) for i in applied if i not in live]
        element = schemas.items(node)
        result_list = copy.deepcopy(live)
        positions = {item_element(item, info, i): i for i, item in enumerate(live)}
        for i, item in enumerate(applied):
            pe = item_element(item, info, i)
            if pe.startswith("k:") and pe in positions:
                result_list[positions[pe]] = merge(live[positions[pe]], item, element, custom=custom)
            else:
                result_list.append(_fresh(item, element, custom))
        return result_list
    return _fresh(applied, node, custom)


def _granular_with_items(value: Any, node: JSON | None) -> bool:
    if isinstance(value, dict):
        return bool(value) and not is_atomic_map(node)
    return isinstance(value, list) and bool(value) and schemas.field_info(node).list_type in ("map", "set")


def _fresh(value: Any, node: JSON | None, custom: bool) -> Any:
    """A value the live object lacks, without its nulls (but a custom resource's null map keys)."""
    if not custom:
        return _without_nulls(value)
    if isinstance(value, dict):
        fresh = {}
        for key, child in value.items():
            child_node, is_key = key_schema(node, key)
            if child is not None or is_key:
                fresh[key] = None if child is None else _fresh(child, child_node, custom)
        return fresh
    if isinstance(value, list):
        element = schemas.items(node)
        return [_fresh(v, element, custom) for v in value]
    return value


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def remove_path(obj: Any, path: Path, node: JSON | None, null_at: FieldSet | None = None) -> None:
    """Delete the field or list item at `path` from `obj` in place (a missing path is ignored). Maps and
    lists emptied by the removal go too, as Go's `omitempty` drops them when the object is stored, but for
    a map key in `null_at` (another manager owns it): structured-merge-diff's RemoveItems leaves an emptied
    map null, and a key, unlike a struct field, stays a member of the result's set, so it stays null."""
    chain: list[tuple[Any, Any, bool]] = []  # (container, key or index, is a map key) from the root down
    parent: Any = obj
    for element in path:
        kind, _, raw = element.partition(":")
        if kind == "f":
            if not isinstance(parent, dict) or raw not in parent:
                return
            child, is_key = key_schema(node, raw)
            chain.append((parent, raw, is_key))
            parent, node = parent[raw], child
            continue
        if not isinstance(parent, list):
            return
        info = schemas.field_info(node)
        index = next((i for i, item in enumerate(parent) if item_element(item, info, i) == element), None)
        if index is None:
            return
        chain.append((parent, index, False))
        parent, node = parent[index], schemas.items(node)
    for depth, (container, key, is_key) in enumerate(reversed(chain)):
        if depth > 0:
            if container[key] not in ({}, []):
                return
            if is_key and null_at and path[: len(chain) - depth] in null_at:
                container[key] = None
                return
        del container[key]
