"""Reading object metadata: cache keys and controller owner references, on raw JSON dicts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Obj = dict[str, Any]


class BadObjectError(ValueError):
    """The object has no readable `metadata.name` (bad input); it cannot be cached."""


def object_key(obj: Obj) -> str:
    """`namespace/name` for namespaced objects, `name` for cluster-scoped ones (client-go's key function)."""
    meta = obj["metadata"]
    name = meta["name"]
    namespace = meta.get("namespace")
    if type(name) is not str or not name:
        raise BadObjectError("metadata.name is not a non-empty string")
    if namespace:
        if type(namespace) is not str:
            raise BadObjectError("metadata.namespace is not a string")
        return f"{namespace}/{name}"
    return name


def split_key(key: str) -> tuple[str, str]:
    """(namespace, name) of a key; namespace is "" for cluster-scoped objects."""
    namespace, sep, name = key.partition("/")
    return (namespace, name) if sep else ("", key)


def controller_owner(obj: Mapping[str, Any]) -> Obj | None:
    """The ownerReference with `controller: true`, if any (apimachinery's metav1.GetControllerOf)."""
    for ref in obj.get("metadata", {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return ref  # type: ignore[no-any-return]
    return None
