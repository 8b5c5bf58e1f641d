"""The create fast path of managedFields: the FieldsV1 tree of an object that is entirely new, built in
one walk. It equals what `kubesim.merge.fieldset.compare` finds between the kind's zero object and the
new one (`kubesim.merge.zero`): maps, structs and non-atomic lists the zero object lacks carry `.`."""

from __future__ import annotations

import functools
from collections.abc import Container
from typing import Any

from kubesim.merge.fieldset import element_rank, item_element
from kubesim.merge.zero import ABSENT, NULL, VALUE, node_held
from kubesim.schema import schemas
from kubesim.schema.nodes import Node, ValueMemo, compiled

JSON = dict[str, Any]
_CONTAINERS = (dict, list)  # a tuple: cheaper to test than the union `dict | list`
_SECTIONS = ValueMemo()
_NOTHING: dict[str, int] = {}  # what an absent or null map holds (read only)


def added_sections(
    obj: JSON, node: JSON | None, *, custom: bool, skip: Container[str], skip_meta: Container[str] = ()
) -> JSON:
    """FieldsV1 of a created object's top level without the `skip` keys, and without the `skip_meta` keys
    of its metadata, which is never a member itself (upstream strips `metadata`). Sections other than
    metadata are memoised by value (the pods of one template share their spec's tree), so callers must
    not mutate them."""
    root = compiled(node)
    held = _NOTHING if custom else node_held(root)  # a custom resource's zero object holds nothing
    tree: JSON = {}
    for key in sorted(obj):
        value = obj[key]
        if key in skip:
            continue
        if isinstance(value, _CONTAINERS):
            child = None if root is None else root.child(key)
            state = held.get(key, ABSENT)
            if key == "metadata" and isinstance(value, dict):
                sub = _added_map(value, child, NULL if state == ABSENT else state, skip_meta)
            elif key == "metadata" or child is None or child.flat:  # flat: cheaper built than keyed
                sub = _added(value, child, state)
            else:
                compute = functools.partial(_added, value, child, state)
                sub = _SECTIONS.get(child, (key, custom, state), value, compute)
            if sub is not None:
                tree["f:" + key] = sub
        elif value is not None:
            tree["f:" + key] = {}
    return tree


def _added_map(value: JSON, node: Node | None, state: int, skip: Container[str] = ()) -> JSON | None:
    """`_added` of a map, without its `skip` keys (a create's metadata without the fields managedFields
    never tracks: cheaper left out than built and then removed)."""
    if not value or (node is not None and node.atomic_map):
        return None if not value and state == VALUE else {}  # an empty struct in place: no change
    member = state == ABSENT
    tree: JSON = {".": {}} if member else {}
    held = node_held(node) if state == VALUE else _NOTHING  # VALUE: built-in kinds only
    for key in sorted(value):
        if key in skip:
            continue
        child = value[key]
        if isinstance(child, _CONTAINERS):
            sub = _added(child, None if node is None else node.child(key), held.get(key, ABSENT))
            if sub is not None:
                tree["f:" + key] = sub
        elif child is not None:
            tree["f:" + key] = {}
    if member and len(tree) == 1:
        return {}  # nothing below: a leaf
    return tree if tree else None  # a map in place that gains nothing


def _added(value: Any, node: Node | None, state: int) -> JSON | None:
    """FieldsV1 of a new `value` that the old object held in `state`; None when that adds nothing."""
    if isinstance(value, dict):
        return _added_map(value, node, state)
    if isinstance(value, list) and value and node is not None:
        list_type = node.list_type
        if list_type != "map" and list_type != "set":
            return {}
        info = schemas.field_info(node.schema)
        element = node.items()
        items: JSON = {}
        for i, item in enumerate(value):
            keyed = list_type == "map" and isinstance(item, dict)
            items[item_element(item, info, i)] = _added_item(item, element) if keyed else {}
        if len(items) > 1:
            items = {k: items[k] for k in sorted(items, key=element_rank)}
        return {".": {}, **items} if state == ABSENT else items  # ABSENT: a list the old object lacked
    return {}


def _added_item(item: JSON, element: Node | None) -> JSON:
    """A list-map item: a member, with the fields of a granular item below its `.`."""
    if not item or (element is not None and element.atomic_map):
        return {}
    tree: JSON = {".": {}}
    for key in sorted(item):
        child = item[key]
        if isinstance(child, _CONTAINERS):
            sub = _added(child, None if element is None else element.child(key), ABSENT)
            tree["f:" + key] = {} if sub is None else sub
        elif child is not None:
            tree["f:" + key] = {}
    return tree if len(tree) > 1 else {}
