"""Server-side apply's merge of an apply configuration into the live object, and the removal of the
fields an applier gave up (list semantics from the schema, as in `kubesim.merge.fieldset`)."""

from __future__ import annotations

import copy
from typing import Any

from kubesim.merge.fieldset import JSON, Path, is_atomic_map, item_element
from kubesim.schema import schemas


def merge(live: Any, applied: Any, node: JSON | None) -> Any:
    """Server-side apply merge of an apply configuration into the live value (both left untouched)."""
    if isinstance(applied, dict) and isinstance(live, dict) and not is_atomic_map(node):
        result = copy.deepcopy(live)
        for key, value in applied.items():
            if value is None:
                result.pop(key, None)
            elif key in live:
                result[key] = merge(live[key], value, schemas.child(node, key))
            else:
                result[key] = _without_nulls(value)
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
                result_list[positions[pe]] = merge(live[positions[pe]], item, element)
            else:
                result_list.append(_without_nulls(item))
        return result_list
    return _without_nulls(applied)


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def remove_path(obj: Any, path: Path, node: JSON | None) -> None:
    """Delete the field or list item at `path` from `obj` in place (a missing path is ignored). Maps and
    lists emptied by the removal go too, as Go's `omitempty` drops them when the object is stored."""
    chain: list[tuple[Any, Any]] = []  # (container, key or index) from the root down
    parent: Any = obj
    for element in path:
        kind, _, raw = element.partition(":")
        if kind == "f":
            if not isinstance(parent, dict) or raw not in parent:
                return
            chain.append((parent, raw))
            parent, node = parent[raw], schemas.child(node, raw)
            continue
        if not isinstance(parent, list):
            return
        info = schemas.field_info(node)
        index = next((i for i, item in enumerate(parent) if item_element(item, info, i) == element), None)
        if index is None:
            return
        chain.append((parent, index))
        parent, node = parent[index], schemas.items(node)
    for depth, (container, key) in enumerate(reversed(chain)):
        if depth > 0 and container[key] not in ({}, []):
            return
        del container[key]
