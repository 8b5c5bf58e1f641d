"""The informer cache: an in-memory Indexer keyed `namespace/name` (or `name`), with multi-valued indices.

Single-threaded by design (one asyncio loop): no locks, no copies. Objects handed out are the cached dicts
themselves — callers must treat them as read-only (copy before mutating), exactly like client-go's cache.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from manager.apimachinery.objects import controller_owner

Obj = dict[str, Any]
IndexFunc = Callable[[Obj], list[str]]

NAMESPACE_INDEX = "namespace"
CONTROLLER_UID_INDEX = "controllerUID"
ORPHAN_INDEX_PREFIX = "_ORPHAN/"


def namespace_index_func(obj: Obj) -> list[str]:
    """The built-in namespace index (client-go's MetaNamespaceIndexFunc)."""
    return [obj["metadata"].get("namespace") or ""]


def controller_uid_index(obj: Obj) -> list[str]:
    """The owner index (CONTROLLER_UID_INDEX): the UID of the controller owner reference, or, for an object
    without one, its namespace's orphan key (`orphan_index_key`), as upstream's PodControllerUIDIndex
    (pkg/controller/controller_utils.go `AddPodControllerUIDIndexer`) so orphans are found by one lookup."""
    ref = controller_owner(obj)
    if ref is not None:
        return [str(ref.get("uid", ""))]
    return [ORPHAN_INDEX_PREFIX + (obj["metadata"].get("namespace") or "")]


def orphan_index_key(namespace: str) -> str:
    """The owner-index value under which objects of `namespace` that have no controller owner are listed."""
    return ORPHAN_INDEX_PREFIX + namespace


# Index functions that read nothing of an object but this metadata field (and the namespace, which an update
# keeps: it is part of the key). An update leaving that field equal leaves their index as it was, so the
# store skips calling them on the old and the new object (most pod updates: status only).
_METADATA_INPUT: tuple[tuple[IndexFunc, str], ...] = ((controller_uid_index, "ownerReferences"),)


def _metadata_input(func: IndexFunc) -> str | None:
    """The one metadata field `func` reads, if it is a known index function (by identity: index functions
    need not be hashable)."""
    return next((field for known, field in _METADATA_INPUT if known is func), None)


class Indexer:
    """Items by key plus named indices (index name -> indexed value -> set of keys).

    The namespace index is always present. Custom indexers may be added at any time, also after items exist.
    An index function that fails on an object indexes it under no value (and counts `index_errors`).
    """

    def __init__(self, indexers: dict[str, IndexFunc] | None = None) -> None:
        self._items: dict[str, Obj] = {}
        self._namespace_index: dict[str, set[str]] = {}
        self._indexers: dict[str, IndexFunc] = {}
        self._indices: dict[str, dict[str, set[str]]] = {}
        self._inputs: dict[str, str | None] = {}  # index name -> `_metadata_input` of its function
        self.index_errors = 0
        if indexers:
            self.add_indexers(indexers)

    # ------------------------------------------------------------------ reads
    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __iter__(self) -> Iterator[Obj]:
        return iter(builtins.list(self._items.values()))

    def get_by_key(self, key: str) -> Obj | None:
        return self._items.get(key)

    def get(self, namespace: str | None, name: str) -> Obj | None:
        return self._items.get(f"{namespace}/{name}" if namespace else name)

    def list(self) -> builtins.list[Obj]:
        return builtins.list(self._items.values())

    def list_keys(self) -> builtins.list[str]:
        return builtins.list(self._items)

    def items(self) -> builtins.list[tuple[str, Obj]]:
        return builtins.list(self._items.items())

    def get_indexers(self) -> dict[str, IndexFunc]:
        return {NAMESPACE_INDEX: namespace_index_func, **self._indexers}

    def index_keys(self, index_name: str, value: str) -> builtins.list[str]:
        """Keys of the objects indexed under `value` in `index_name` (KeyError for an unknown index)."""
        index = self._namespace_index if index_name == NAMESPACE_INDEX else self._indices[index_name]
        return builtins.list(index.get(value, ()))

    def by_index(self, index_name: str, value: str) -> builtins.list[Obj]:
        """Objects indexed under `value`; e.g. `by_index("namespace", "default")`."""
        items = self._items
        return [items[key] for key in self.index_keys(index_name, value)]

    def list_index_values(self, index_name: str) -> builtins.list[str]:
        index = self._namespace_index if index_name == NAMESPACE_INDEX else self._indices[index_name]
        return builtins.list(index)

    def by_namespace(self, namespace: str) -> builtins.list[Obj]:
        return self.by_index(NAMESPACE_INDEX, namespace)

    # ------------------------------------------------------------------ indexers
    def add_indexers(self, indexers: dict[str, IndexFunc]) -> None:
        """Add named index functions; existing items are indexed right away."""
        for name, func in indexers.items():
            if name == NAMESPACE_INDEX or name in self._indexers:
                raise ValueError(f"indexer {name!r} already exists")
            index: dict[str, set[str]] = {}
            for key, obj in self._items.items():
                for value in self._values(func, obj):
                    index.setdefault(value, set()).add(key)
            self._indexers[name] = func
            self._indices[name] = index
            self._inputs[name] = _metadata_input(func)

    def _values(self, func: IndexFunc, obj: Obj) -> Iterable[str]:
        try:
            return func(obj)
        except Exception:
            self.index_errors += 1
            return ()

    # ------------------------------------------------------------------ writes (the informer's)
    def upsert(self, key: str, obj: Obj) -> Obj | None:
        """Store `obj` under `key`; return the object it replaced (None when new)."""
        items = self._items
        old = items.get(key)
        items[key] = obj
        if old is None:
            namespace, _, _ = key.rpartition("/")
            bucket = self._namespace_index.get(namespace)
            if bucket is None:
                self._namespace_index[namespace] = {key}
            else:
                bucket.add(key)
            for name, func in self._indexers.items():
                index = self._indices[name]
                for value in self._values(func, obj):
                    index.setdefault(value, set()).add(key)
        elif self._indexers:
            self._reindex(key, old, obj)
        return old

    def _reindex(self, key: str, old: Obj, new: Obj) -> None:
        inputs = self._inputs
        for name, func in self._indexers.items():
            field = inputs[name]
            if field is not None:
                old_meta, new_meta = old.get("metadata"), new.get("metadata")
                if (
                    type(old_meta) is dict
                    and type(new_meta) is dict
                    and old_meta.get(field) == new_meta.get(field)
                ):
                    continue
            before = self._values(func, old)
            after = self._values(func, new)
            if before == after:
                continue
            index = self._indices[name]
            for value in before:
                self._discard(index, value, key)
            for value in after:
                index.setdefault(value, set()).add(key)

    @staticmethod
    def _discard(index: dict[str, set[str]], value: str, key: str) -> None:
        bucket = index.get(value)
        if bucket is not None:
            bucket.discard(key)
            if not bucket:
                del index[value]

    def delete(self, key: str) -> Obj | None:
        """Remove `key`; return the object removed (None when absent)."""
        old = self._items.pop(key, None)
        if old is None:
            return None
        namespace, _, _ = key.rpartition("/")
        self._discard(self._namespace_index, namespace, key)
        for name, func in self._indexers.items():
            index = self._indices[name]
            for value in self._values(func, old):
                self._discard(index, value, key)
        return old

    def clear(self) -> None:
        self._items.clear()
        self._namespace_index.clear()
        for index in self._indices.values():
            index.clear()
