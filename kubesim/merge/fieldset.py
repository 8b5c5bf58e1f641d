"""Field sets for managedFields (FieldsV1), computed from objects and the schemas' list/map semantics.

A path is a tuple of FieldsV1 path elements: `f:<field>`, `k:<json of the list-map keys>` (keys sorted),
`v:<json value>` (set items) and `i:<index>` (list items without a usable key). A field set is a `set` of
member paths: leaves (scalars, atomic lists/maps), list items, and - for update-style sets - empty maps
and the maps, structs and non-atomic lists the old object lacked (FieldsV1's `.` marker; see
`kubesim.merge.zero` for what a Go-typed old object holds). An apply-style set (ToFieldSet) lists nothing
for an empty granular map or list (no item to visit: an applier sending `{}` or `[]` owns nothing), and
lists each map key as a member whatever it holds: a key of an `additionalProperties` map, or an undeclared
key of an `x-kubernetes-preserve-unknown-fields` object, typed as structured-merge-diff's deduced type (maps
granular with their keys members, lists atomic; kube-openapi's schemaconv). Struct fields never are; so an
applier that stops sending a key removes it as a whole unless another manager owns the key itself.

List semantics (`x-kubernetes-list-type`): `map` items are addressed by their keys, `set` items by value,
`atomic` (and lists without a type) are leaves. Maps are granular unless `x-kubernetes-map-type: atomic`.
Missing list-map key fields fall back to their API default (`protocol: TCP` for ports).
"""

from __future__ import annotations

from typing import Any

import orjson

from kubesim.merge import zero
from kubesim.merge.zero import ABSENT, NULL, VALUE
from kubesim.schema import schemas

JSON = dict[str, Any]
_CONTAINERS = (dict, list)  # a tuple: cheaper to test than the union `dict | list`
Path = tuple[str, ...]
FieldSet = set[Path]

_KEY_DEFAULTS = {"protocol": "TCP"}
_NOTHING: dict[str, int] = {}  # what an absent or null map holds (read only)


def _json(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def is_atomic_map(node: JSON | None) -> bool:
    return node is not None and node.get("x-kubernetes-map-type") == "atomic"


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
    value: Any,
    node: JSON | None,
    prefix: Path = (),
    *,
    update: bool = False,
    custom: bool = False,
    state: int = ABSENT,
) -> FieldSet:
    """Every member path of `value`: as an apply configuration lists them (structured-merge-diff's
    ToFieldSet), or when `update` as an Update adds them to an old object where `value` was in `state`
    (`kubesim.merge.zero`), with its maps and lists that the old object lacked as members too. A custom
    resource's null map keys are members of an apply set (built-in kinds': skipped, the merge drops them)."""
    out: FieldSet = set()
    if update:
        _collect(value, node, prefix, out, custom, state)
    else:
        _collect_applied(value, node, prefix, out, custom)
    return out


def _collect(value: Any, node: JSON | None, prefix: Path, out: FieldSet, custom: bool, state: int) -> None:
    """An Update's set; `state` is the old object's state of this node."""
    if isinstance(value, dict):
        if is_atomic_map(node) or not value:
            if value or state != VALUE:  # an empty struct in place is no change
                out.add(prefix)
            return
        if state == ABSENT and prefix:
            out.add(prefix)
        held = zero.held(node, custom) if state == VALUE else _NOTHING
        for key, child in value.items():
            if child is not None:
                _collect(
                    child, schemas.child(node, key), (*prefix, "f:" + key), out, custom, held.get(key, ABSENT)
                )
        return
    if isinstance(value, list):
        info = schemas.field_info(node)
        if info.list_type not in ("map", "set") or not value:
            out.add(prefix)
            return
        if state == ABSENT:
            out.add(prefix)
        element = schemas.items(node)
        for i, item in enumerate(value):
            path = (*prefix, item_element(item, info, i))
            out.add(path)
            if info.list_type == "map" and isinstance(item, dict) and item and not is_atomic_map(element):
                for key, child in item.items():
                    if child is not None:
                        _collect(child, schemas.child(element, key), (*path, "f:" + key), out, custom, ABSENT)
        return
    out.add(prefix)


# structured-merge-diff's deduced type, which types the undeclared keys of an
# x-kubernetes-preserve-unknown-fields object (kube-openapi's schemaconv): maps granular, lists atomic
_DEDUCED: JSON = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def _collect_applied(value: Any, node: JSON | None, prefix: Path, out: FieldSet, nulls: bool) -> None:
    """An apply configuration's set (ToFieldSet): leaves, list items and map keys, never struct fields.
    An empty granular map or list lists nothing (there is no item to visit); an atomic one is a leaf."""
    if isinstance(value, dict):
        if is_atomic_map(node):
            out.add(prefix)
        else:
            _collect_keys(value, node, prefix, out, nulls)
        return
    if isinstance(value, list):
        info = schemas.field_info(node)
        if info.list_type not in ("map", "set"):
            out.add(prefix)
            return
        element = schemas.items(node)
        for i, item in enumerate(value):
            path = (*prefix, item_element(item, info, i))
            out.add(path)
            if info.list_type == "map" and isinstance(item, dict) and item and not is_atomic_map(element):
                _collect_keys(item, element, path, out, nulls)
        return
    out.add(prefix)


def key_schema(node: JSON | None, key: str) -> tuple[JSON | None, bool]:
    """The schema of `key` in an object of schema `node`, and whether `key` is a map key rather than a
    declared property: a key of an additionalProperties map, or an unknown field kept by
    x-kubernetes-preserve-unknown-fields (typed as the deduced type)."""
    if node is None:
        return None, False
    properties = node.get("properties") or _NOTHING
    if key in properties:
        return schemas.child(node, key), False
    if isinstance(node.get("additionalProperties"), dict):
        return schemas.child(node, key), True
    if node.get("x-kubernetes-preserve-unknown-fields"):
        return _DEDUCED, True
    return schemas.child(node, key), False


def _collect_keys(value: JSON, node: JSON | None, prefix: Path, out: FieldSet, nulls: bool) -> None:
    # a map key is a member of its own whatever it holds (null too: visitMapItems inserts it after the
    # walk of its value); a declared property is not
    for key, child in value.items():
        child_node, is_key = key_schema(node, key)
        path = (*prefix, "f:" + key)
        if is_key and (child is not None or nulls):
            out.add(path)
        if child is not None:
            _collect_applied(child, child_node, path, out, nulls)


def compare(
    old: Any, new: Any, node: JSON | None, prefix: Path = (), *, custom: bool = False
) -> tuple[FieldSet, FieldSet, FieldSet]:
    """(added, modified, removed) paths going from `old` to `new`, as structured-merge-diff's typed Compare
    finds them between Go-typed objects: keys missing from `old` are looked up in `kubesim.merge.zero`."""
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
            before = old.get(key)
            if before is None:
                if value is not None:
                    if key in old:  # a null in place
                        state = NULL
                    else:
                        state = ABSENT if custom else zero.held(node, False).get(key, ABSENT)
                    added.update(field_set(value, child, path, update=True, custom=custom, state=state))
            elif value is None:  # a null in place of a value (custom resources): its key stays
                gone = field_set(before, child, path, update=True, custom=custom)
                if gone == {path}:
                    modified.add(path)  # a leaf that changed
                else:
                    removed.update(gone - {path})
            else:
                _compare(before, value, child, path, out, custom)
        for key, value in old.items():
            if key not in new and value is not None:
                path = (*prefix, "f:" + key)
                removed.update(field_set(value, schemas.child(node, key), path, update=True, custom=custom))
        return
    info = schemas.field_info(node)
    if isinstance(old, list) and isinstance(new, list) and info.list_type in ("map", "set"):
        element = schemas.items(node)
        old_items = {item_element(item, info, i): item for i, item in enumerate(old)}
        new_items = {item_element(item, info, i): item for i, item in enumerate(new)}
        for pe, item in new_items.items():
            path = (*prefix, pe)
            if pe not in old_items:
                added.update(field_set(item, element, path, update=True, custom=custom) | {path})
            elif info.list_type == "map":
                _compare(old_items[pe], item, element, path, out, custom)
        for pe, item in old_items.items():
            if pe not in new_items:
                removed.update(
                    field_set(item, element, (*prefix, pe), update=True, custom=custom) | {(*prefix, pe)}
                )
        return
    modified.add(prefix)


_ELEMENT_ORDER = {"f": 1, "k": 2, "v": 3, "i": 4}


def element_rank(element: str) -> tuple[int, str]:
    """Sort key of a path element: fields, then keyed items, set items and indexed items."""
    return _ELEMENT_ORDER.get(element[:1], 5), element


def _element_key(path: Path) -> tuple[tuple[int, str], ...]:
    return tuple(map(element_rank, path))


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
