"""Field sets for managedFields (FieldsV1), computed from objects and the schemas' list/map semantics.

A path is a tuple of FieldsV1 path elements: `f:<field>`, `k:<json of the list-map keys>` (keys sorted),
`v:<json value>` (set items) and `i:<index>` (list items without a usable key). A field set is a `set` of
member paths: leaves (scalars, atomic lists/maps, empty maps), list items, and - for update-style sets -
newly created granular maps (FieldsV1's `.` marker).

List semantics (`x-kubernetes-list-type`): `map` items are addressed by their keys, `set` items by value,
`atomic` (and lists without a type) are leaves. Maps are granular unless `x-kubernetes-map-type: atomic`.
Missing list-map key fields fall back to their API default (`protocol: TCP` for ports).
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Container
from typing import Any

import orjson

from kubesim.schema import schemas
from kubesim.schema.nodes import Node, ValueMemo, compiled

JSON = dict[str, Any]
_CONTAINERS = (dict, list)  # a tuple: cheaper to test than the union `dict | list`
Path = tuple[str, ...]
FieldSet = set[Path]

_KEY_DEFAULTS = {"protocol": "TCP"}


def _json(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def is_atomic_map(node: JSON | None) -> bool:
    return node is not None and node.get("x-kubernetes-map-type") == "atomic"


def _is_granular_map(node: JSON | None, custom: bool) -> bool:
    """Maps recorded with `.` when an update creates them: string maps, any object of a custom resource."""
    if node is None or custom:
        return True
    return "properties" not in node and isinstance(node.get("additionalProperties"), dict)


def item_element(item: Any, info: schemas.FieldInfo, index: int) -> str:
    if info.list_type == "set":
        return "v:" + _json(item)
    if info.list_type == "map" and isinstance(item, dict) and info.list_map_keys:
        keys = {}
        for key in info.list_map_keys:
            value = item.get(key, _KEY_DEFAULTS.get(key))
            if value is None:
                return f"i:{index}"
            keys[key] = value
        return "k:" + _json(keys)
    return f"i:{index}"


def field_set(
    value: Any, node: JSON | None, prefix: Path = (), *, update: bool = False, custom: bool = False
) -> FieldSet:
    """Every member path of `value` (an apply configuration, or an added subtree when `update`)."""
    out: FieldSet = set()
    _collect(value, node, prefix, out, update, custom)
    return out


def _collect(value: Any, node: JSON | None, prefix: Path, out: FieldSet, update: bool, custom: bool) -> None:
    if isinstance(value, dict):
        if is_atomic_map(node) or not value:
            out.add(prefix)
            return
        if update and prefix and _is_granular_map(node, custom):
            out.add(prefix)
        for key, child in value.items():
            if child is not None:
                _collect(child, schemas.child(node, key), (*prefix, "f:" + key), out, update, custom)
        return
    if isinstance(value, list):
        info = schemas.field_info(node)
        if info.list_type not in ("map", "set") or not value:
            out.add(prefix)
            return
        element = schemas.items(node)
        for i, item in enumerate(value):
            path = (*prefix, item_element(item, info, i))
            out.add(path)
            if info.list_type == "map" and isinstance(item, dict):
                for key, child in item.items():
                    if child is not None:
                        _collect(child, schemas.child(element, key), (*path, "f:" + key), out, update, custom)
        return
    out.add(prefix)


def added_tree(value: Any, node: JSON | None, *, custom: bool = False) -> JSON:
    """FieldsV1 of a value that is entirely new (what an update-style `field_set` would encode), built in
    one pass: the create fast path."""
    return _added(value, compiled(node), custom, True)


_SECTIONS = ValueMemo()


def added_sections(
    obj: JSON, node: JSON | None, *, custom: bool, skip: Container[str], skip_meta: Container[str] = ()
) -> JSON:
    """`added_tree` of an object's top level without the `skip` keys, and without the `skip_meta` keys of
    a metadata map. Sections other than metadata are memoised by value (the pods of one template share
    their spec's tree), so callers must not mutate them."""
    root = compiled(node)
    tree: JSON = {}
    for key in sorted(obj):
        value = obj[key]
        if key in skip:
            continue
        if isinstance(value, _CONTAINERS):
            child = None if root is None else root.child(key)
            if key == "metadata" and isinstance(value, dict):
                tree["f:metadata"] = _added_map(value, child, custom, skip_meta)
            elif key == "metadata" or child is None or child.flat:  # flat: cheaper built than keyed
                tree["f:" + key] = _added(value, child, custom, False)
            else:
                compute = functools.partial(_added, value, child, custom, False)
                tree["f:" + key] = _SECTIONS.get(child, (key, custom), value, compute)
        elif value is not None:
            tree["f:" + key] = {}
    return tree


def _added_map(
    value: JSON, node: Node | None, custom: bool, skip: Container[str] = (), root: bool = False
) -> JSON:
    """`_added` of a map, without its `skip` keys (a create's metadata without the fields managedFields
    never tracks: cheaper left out than built and then removed). A root map (the object, a list item) has
    no `.` entry of its own."""
    if not value or (node is not None and node.atomic_map):
        return {}
    granular = not root and (node is None or custom or node.string_map)
    tree: JSON = {".": {}} if granular else {}
    for key in sorted(value):
        if key in skip:
            continue
        child = value[key]
        if isinstance(child, _CONTAINERS):
            tree["f:" + key] = _added(child, None if node is None else node.child(key), custom, False)
        elif child is not None:
            tree["f:" + key] = {}
    return tree


def _added(value: Any, node: Node | None, custom: bool, root: bool) -> JSON:
    if isinstance(value, dict):
        return _added_map(value, node, custom, (), root)
    if isinstance(value, list) and value and node is not None:
        list_type = node.list_type
        if list_type != "map" and list_type != "set":
            return {}
        info = schemas.field_info(node.schema)
        element = node.items()
        items: JSON = {}
        for i, item in enumerate(value):
            sub: JSON = {}
            if list_type == "map" and isinstance(item, dict):
                sub = _added(item, element, custom, True)
                if sub:
                    sub = {".": {}, **sub}
            items[item_element(item, info, i)] = sub
        if len(items) == 1:
            return items
        return {k: items[k] for k in sorted(items, key=lambda e: (_ELEMENT_ORDER.get(e[:1], 5), e))}
    return {}


def compare(
    old: Any, new: Any, node: JSON | None, prefix: Path = (), *, custom: bool = False
) -> tuple[FieldSet, FieldSet, FieldSet]:
    """(added, modified, removed) paths going from `old` to `new` (update-style added sets)."""
    added: FieldSet = set()
    modified: FieldSet = set()
    removed: FieldSet = set()
    _compare(old, new, node, prefix, (added, modified, removed), custom)
    return added, modified, removed


def _compare(
    old: Any,
    new: Any,
    node: JSON | None,
    prefix: Path,
    out: tuple[FieldSet, FieldSet, FieldSet],
    custom: bool,
) -> None:
    added, modified, removed = out
    if old == new:
        return
    if isinstance(old, dict) and isinstance(new, dict) and not is_atomic_map(node):
        for key, value in new.items():
            path, child = (*prefix, "f:" + key), schemas.child(node, key)
            if old.get(key) is None:
                if value is not None:
                    added.update(field_set(value, child, path, update=True, custom=custom))
            elif value is None:
                removed.update(field_set(old[key], child, path, custom=custom))
            else:
                _compare(old[key], value, child, path, out, custom)
        for key, value in old.items():
            if key not in new and value is not None:
                removed.update(
                    field_set(value, schemas.child(node, key), (*prefix, "f:" + key), custom=custom)
                )
        return
    info = schemas.field_info(node)
    if isinstance(old, list) and isinstance(new, list) and info.list_type in ("map", "set"):
        element = schemas.items(node)
        old_items = {item_element(item, info, i): item for i, item in enumerate(old)}
        new_items = {item_element(item, info, i): item for i, item in enumerate(new)}
        for pe, item in new_items.items():
            path = (*prefix, pe)
            if pe not in old_items:
                added.add(path)
                if info.list_type == "map" and isinstance(item, dict):
                    for key, child in item.items():
                        if child is not None:
                            added.update(
                                field_set(
                                    child,
                                    schemas.child(element, key),
                                    (*path, "f:" + key),
                                    update=True,
                                    custom=custom,
                                )
                            )
            elif info.list_type == "map":
                _compare(old_items[pe], item, element, path, out, custom)
        for pe, item in old_items.items():
            if pe not in new_items:
                removed.update(field_set(item, element, (*prefix, pe), custom=custom) | {(*prefix, pe)})
        return
    modified.add(prefix)


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


_ELEMENT_ORDER = {"f": 1, "k": 2, "v": 3, "i": 4}


def _element_key(path: Path) -> tuple[tuple[int, str], ...]:
    return tuple((_ELEMENT_ORDER.get(e[:1], 5), e) for e in path)


def to_fields_v1(fields: FieldSet) -> JSON:
    """FieldsV1 JSON: a tree of path elements with `.` marking members that also have children. Paths are
    inserted in sorted order, so every node's keys come out sorted with `.` first."""
    tree: JSON = {}
    members: set[int] = set()
    for path in sorted(fields, key=_element_key):
        node = tree
        for element in path:
            child = node.get(element)
            if child is None:
                if id(node) in members and not node:
                    node["."] = {}
                child = node[element] = {}
            node = child
        members.add(id(node))
    return tree


def from_fields_v1(tree: Any, prefix: Path = ()) -> FieldSet:
    out: FieldSet = set()
    if not isinstance(tree, dict):
        return out
    if prefix and (not tree or "." in tree):
        out.add(prefix)
    for element, child in tree.items():
        if element != ".":
            out |= from_fields_v1(child, (*prefix, element))
    return out


def path_string(path: Path) -> str:
    """A path as SMD prints it in conflicts: `.spec.containers[name="c"].image`."""
    text = ""
    for element in path:
        kind, _, raw = element.partition(":")
        if kind == "f":
            text += "." + raw
        elif kind == "k":
            keys = orjson.loads(raw)
            text += "[" + ",".join(f"{k}={_json(v)}" for k, v in keys.items()) + "]"
        elif kind == "v":
            text += "[=" + raw + "]"
        else:
            text += "[" + raw + "]"
    return text
