"""Schema nodes compiled once for the hot per-request walks (unknown-field checks, a create's managedFields).

`compiled(node)` turns a `kubesim.schema.schemas` node (a dict) into a `Node` whose flags are plain attributes
and whose children are resolved once and remembered, so that walking an object costs attribute reads
instead of repeated `$ref` resolution, extension look-ups and memo-table probes. The answers are exactly
those of the `kubesim.schema.schemas` functions they are computed from.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, TypeVar

import orjson

from kubesim.schema import schemas

JSON = dict[str, Any]
T = TypeVar("T")
MemoKey = tuple[int, Hashable, bytes]


_ADDITIONAL, _ITEMS = 1, 2
# ValueMemo: after _TRIAL look-ups for an owner with fewer than one hit in _MIN_HIT_SHARE, its next
# _PAUSE look-ups skip the table; _MAX_ODDS bounds the counters (owners come and go with CRDs).
_TRIAL, _MIN_HIT_SHARE, _PAUSE, _MAX_ODDS = 64, 8, 1024, 4096


class Node:
    """One schema node with its walk-relevant facts precomputed."""

    __slots__ = (
        "_additional",
        "_children",
        "_flat",
        "_items",
        "_resolved",
        "additional",
        "atomic_map",
        "decode_facts",
        "embedded",
        "free_form",
        "list_map_keys",
        "list_type",
        "merge_held",
        "object_typed",
        "properties",
        "schema",
        "x_preserve",
    )

    def __init__(self, schema: JSON) -> None:
        self.schema = schema
        properties = schema.get("properties")
        self.properties: JSON | None = properties if isinstance(properties, dict) else None
        self.additional: Any = schema.get("additionalProperties")
        self.atomic_map = schema.get("x-kubernetes-map-type") == "atomic"
        info = schemas.field_info(schema)
        self.list_type = info.list_type
        self.list_map_keys = info.list_map_keys
        self.free_form = schemas.preserves_unknown(schema)
        self.x_preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
        self.object_typed = "object" in schemas.types(schema)
        self.embedded = bool(schema.get("x-kubernetes-embedded-resource"))
        self.decode_facts: Any = None  # kubesim.validation.decode_types.Facts, computed on first use
        self.merge_held: Any = None  # kubesim.merge.zero's {field: state} of a struct, computed on first use
        self._children: dict[str, Node | None] = {}
        self._additional: Node | None = None
        self._items: Node | None = None
        self._resolved = 0  # bits: _ADDITIONAL, _ITEMS once computed
        self._flat: bool | None = None

    def child(self, key: str) -> Node | None:
        """Compiled `schemas.child(schema, key)`."""
        properties = self.properties
        if properties and key in properties:
            try:
                return self._children[key]
            except KeyError:
                found = self._children[key] = compiled(schemas.child(self.schema, key))
                return found
        if not self._resolved & _ADDITIONAL:
            self._additional = compiled(schemas.child(self.schema, key))
            self._resolved |= _ADDITIONAL
        return self._additional

    def items(self) -> Node | None:
        """Compiled `schemas.items(schema)`."""
        if not self._resolved & _ITEMS:
            self._items = compiled(schemas.items(self.schema))
            self._resolved |= _ITEMS
        return self._items

    @property
    def flat(self) -> bool:
        """An object whose declared fields and map values are all typed as scalars: a walk of its value goes
        one level deep, cheaper than keying a `ValueMemo` by the value (an event's involvedObject, a
        ConfigMap's data, a small custom spec). Decides only whether a walk is memoised, never its result."""
        if self._flat is None:
            self._flat = self._all_scalar_children()
        return self._flat

    def _all_scalar_children(self) -> bool:
        if self.x_preserve or "object" not in schemas.types(self.schema):
            return False
        additional = self.additional
        if additional is not None and not isinstance(additional, dict):
            return False  # additionalProperties: true (or false: left to the memo, rare)
        if self.properties is None and additional is None:
            return False
        children = [self.child(key) for key in self.properties or ()]
        if isinstance(additional, dict):
            children.append(compiled(schemas.resolve(additional)))
        return all(child is not None and _scalar(child.schema) for child in children)


def _scalar(schema: JSON) -> bool:
    """Typed (or, for int-or-string and quantities, every branch typed) as scalars only."""
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return False
    found = schemas.types(schema)
    if not found:
        for branch in schema.get("oneOf") or schema.get("anyOf") or ():
            if not isinstance(branch, dict) or not schemas.types(branch):
                return False
            found |= schemas.types(branch)
    return bool(found) and not found & {"object", "array"}


_compiled: dict[int, tuple[JSON, Node]] = {}
schemas.memo_tables.append(_compiled)


def compiled(schema: JSON | None) -> Node | None:
    if schema is None:
        return None
    hit = _compiled.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    node = Node(schema)
    _compiled[id(schema)] = (schema, node)
    return node


class ValueMemo:
    """Remembered results of a pure function of (owner, extra, value) for values that arrive over and over:
    the pods of one template, the objects a controller rewrites. `owner` is a schema `Node` (or any object
    that outlives the entry). Keyed by the value's JSON bytes (cheap to produce next to walking it in
    Python); bounded in entries and value size; forgotten with the schemas when a CRD changes.

    Values that never repeat (each custom resource's own spec, each event) would only pay for the key and
    churn the table: an owner whose look-ups mostly miss is not memoised for a while, then tried again
    (the check costs a workload of repeated values about 0.7 % of its create path: benchmarks/README.md)."""

    def __init__(self, entries: int = 512, max_value_bytes: int = 8192) -> None:
        self._table: dict[tuple[int, Hashable, bytes], tuple[object, Any]] = {}
        self._odds: dict[int, list[int]] = {}  # id(owner) -> [look-ups, hits]
        self._entries = entries
        self._max_value_bytes = max_value_bytes
        schemas.memo_tables.append(self._table)
        schemas.memo_tables.append(self._odds)

    def lookup(self, owner: object, extra: Hashable, value: Any) -> tuple[MemoKey | None, Any]:
        """(key to `store` under, remembered result or None); the key is None for values never memoised."""
        odds = self._odds.get(id(owner))  # per owner (a section's schema node): no tuple to build and hash
        if odds is None:
            if len(self._odds) >= _MAX_ODDS:
                self._odds.clear()
            odds = self._odds[id(owner)] = [0, 0]
        odds[0] += 1
        if odds[0] > _TRIAL and odds[1] * _MIN_HIT_SHARE < odds[0]:
            if odds[0] <= _TRIAL + _PAUSE:
                return None, None  # mostly misses: computed without a key for now
            odds[0] = odds[1] = 0  # try again
        try:
            data = orjson.dumps(value)
        except (TypeError, orjson.JSONEncodeError):  # YAML may decode keys that JSON cannot hold
            return None, None
        if len(data) > self._max_value_bytes:
            return None, None
        key = (id(owner), extra, data)
        hit = self._table.get(key)
        if hit is not None and hit[0] is owner:
            odds[1] += 1
            return key, hit[1]
        return key, None

    def store(self, key: MemoKey, owner: object, result: Any) -> None:
        if len(self._table) >= self._entries:
            self._table.clear()
        self._table[key] = (owner, result)

    def get(self, owner: object, extra: Hashable, value: Any, compute: Callable[[], T]) -> T:
        """`compute()` (whose result callers must not mutate) unless known for this owner, extra and value."""
        key, hit = self.lookup(owner, extra, value)
        if hit is not None:
            known: T = hit
            return known
        result = compute()
        if key is not None:
            self.store(key, owner, result)
        return result
