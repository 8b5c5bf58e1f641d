"""Listers: the typed, read-only view of an informer's cache (client-go's generated listers, in one generic).

The cache holds the decoded JSON dicts; a `Lister[T]` only says what type the reader sees them as, from the
`GroupVersionResource[T]` it was asked for (a TypedDict for a custom resource, a plain dict by default).
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator
from typing import Protocol

from manager.apimachinery.resources import ObjT


class Lister(Protocol[ObjT]):
    """Reads of one informer's cache. Objects are shared with every other reader: never mutate them."""

    def __len__(self) -> int: ...

    def __contains__(self, key: object) -> bool: ...

    def __iter__(self) -> Iterator[ObjT]: ...

    def get_by_key(self, key: str) -> ObjT | None:
        """The object under `namespace/name` (or `name` when cluster-scoped)."""
        ...

    def get(self, namespace: str | None, name: str) -> ObjT | None: ...

    def list(self) -> builtins.list[ObjT]: ...

    def list_keys(self) -> builtins.list[str]: ...

    def by_index(self, index_name: str, value: str) -> builtins.list[ObjT]:
        """Objects indexed under `value`, e.g. `by_index(CONTROLLER_UID_INDEX, owner_uid)`."""
        ...

    def index_keys(self, index_name: str, value: str) -> builtins.list[str]: ...

    def list_index_values(self, index_name: str) -> builtins.list[str]: ...

    def by_namespace(self, namespace: str) -> builtins.list[ObjT]: ...
