"""What the monitors hand the graph builder (upstream: graph_builder.go `event`, `eventType`,
`deletionStartsWithFinalizer`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controllers.garbagecollector.graph import has_finalizer

ADD, UPDATE, DELETE = 0, 1, 2


class GraphEvent:
    """One change to apply (upstream `event`): `api_version`/`kind` are the monitor's resource's, since
    metadata-only objects do not carry their own. No __eq__: two equal-looking events are still two events."""

    __slots__ = ("api_version", "kind", "obj", "old", "type", "virtual")

    def __init__(
        self,
        type: int,
        obj: Mapping[str, Any],
        api_version: str,
        kind: str,
        old: Mapping[str, Any] | None = None,
        virtual: bool = False,
    ) -> None:
        self.type = type
        self.obj = obj
        self.old = old
        self.api_version = api_version
        self.kind = kind
        self.virtual = virtual


def being_deleted(meta: Mapping[str, Any]) -> bool:
    return bool(meta.get("deletionTimestamp"))


def deletion_starts_with(old: Mapping[str, Any] | None, meta: Mapping[str, Any], finalizer: str) -> bool:
    """The object is being deleted with `finalizer`, and was not before (`deletionStartsWithFinalizer`)."""
    if not being_deleted(meta) or not has_finalizer(meta, finalizer):
        return False
    if old is None:
        return True
    old_meta = old.get("metadata") or {}
    return not being_deleted(old_meta) or not has_finalizer(old_meta, finalizer)
