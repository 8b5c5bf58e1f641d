"""Finalizers on raw objects, with controller-runtime's controllerutil semantics: each edit says whether it
changed the object, so a controller writes only when something changed (see `manager.client.toolkit` for the
patch that sends the list)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def contains_finalizer(obj: Mapping[str, Any], finalizer: str) -> bool:
    return finalizer in (obj.get("metadata", {}).get("finalizers") or ())


def add_finalizer(obj: dict[str, Any], finalizer: str) -> bool:
    """Append `finalizer` to `metadata.finalizers` unless present; return whether it was added."""
    meta = obj.setdefault("metadata", {})
    finalizers = meta.get("finalizers") or []
    if finalizer in finalizers:
        return False
    meta["finalizers"] = [*finalizers, finalizer]
    return True


def remove_finalizer(obj: dict[str, Any], finalizer: str) -> bool:
    """Remove every occurrence of `finalizer`; return whether the list changed."""
    meta = obj.get("metadata")
    finalizers = (meta or {}).get("finalizers") or []
    kept = [f for f in finalizers if f != finalizer]
    if len(kept) == len(finalizers):
        return False
    assert meta is not None
    meta["finalizers"] = kept
    return True
