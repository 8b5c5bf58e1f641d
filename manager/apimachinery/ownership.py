"""Owner references on raw objects, with controller-runtime's `SetControllerReference`/`SetOwnerReference`
rules: the reference is built from the owner object itself (its apiVersion, kind, name, uid), a controller
reference never replaces another owner's, and an owner must be cluster-scoped or in the object's namespace."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from manager.apimachinery.objects import controller_owner


class OwnerReferenceError(ValueError):
    """The owner cannot own the object (scope or namespace mismatch, or the owner lacks identity)."""


class AlreadyOwnedError(OwnerReferenceError):
    """The object already has a controller owner reference to another object."""

    def __init__(self, obj: Mapping[str, Any], owner: Mapping[str, Any]) -> None:
        meta = obj.get("metadata", {})
        self.object = obj
        self.owner = owner
        where = f"{meta.get('namespace')}/{meta.get('name')}" if meta.get("namespace") else meta.get("name")
        super().__init__(
            f"object {where} is already owned by another {owner.get('kind')} controller {owner.get('name')}"
        )


def _group(api_version: str) -> str:
    group, _, _ = str(api_version).rpartition("/")
    return group


def _same_object(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    # Group, kind and name (not version, not uid), as controller-runtime's referSameObject.
    return (
        _group(a.get("apiVersion", "")) == _group(b.get("apiVersion", ""))
        and a.get("kind") == b.get("kind")
        and a.get("name") == b.get("name")
    )


def _reference(owner: Mapping[str, Any]) -> dict[str, Any]:
    meta = owner.get("metadata") or {}
    missing = [
        f
        for f, v in (
            ("apiVersion", owner.get("apiVersion")),
            ("kind", owner.get("kind")),
            ("metadata.name", meta.get("name")),
            ("metadata.uid", meta.get("uid")),
        )
        if not v
    ]
    if missing:
        raise OwnerReferenceError(f"the owner has no {', '.join(missing)}")
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
    }


def _validate_scope(owner: Mapping[str, Any], obj: Mapping[str, Any]) -> None:
    owner_ns = (owner.get("metadata") or {}).get("namespace") or ""
    if not owner_ns:
        return
    obj_ns = (obj.get("metadata") or {}).get("namespace") or ""
    if not obj_ns:
        raise OwnerReferenceError(
            f"cluster-scoped resource must not have a namespace-scoped owner, owner's namespace {owner_ns}"
        )
    if owner_ns != obj_ns:
        raise OwnerReferenceError(
            f"cross-namespace owner references are disallowed, owner's namespace {owner_ns}, "
            f"obj's namespace {obj_ns}"
        )


def _upsert(obj: dict[str, Any], ref: dict[str, Any]) -> None:
    meta = obj.setdefault("metadata", {})
    refs = list(meta.get("ownerReferences") or [])
    for index, existing in enumerate(refs):
        if _same_object(existing, ref):
            refs[index] = ref
            break
    else:
        refs.append(ref)
    meta["ownerReferences"] = refs


def set_controller_reference(
    owner: Mapping[str, Any], obj: dict[str, Any], block_owner_deletion: bool = True
) -> None:
    """Make `owner` the controller of `obj` (in place): garbage collection of `obj` with its owner, and
    `Owns(...)` watches map `obj`'s events to the owner.

    Raises `AlreadyOwnedError` when another object is `obj`'s controller, `OwnerReferenceError` when the
    owner is namespaced and `obj` is cluster-scoped or in another namespace. A reference to the same owner
    (group, kind, name) is replaced."""
    ref = _reference(owner)
    ref["controller"] = True
    if block_owner_deletion:
        ref["blockOwnerDeletion"] = True
    existing = controller_owner(obj)
    if existing is not None and not _same_object(existing, ref):
        raise AlreadyOwnedError(obj, existing)
    _validate_scope(owner, obj)
    _upsert(obj, ref)


def set_owner_reference(owner: Mapping[str, Any], obj: dict[str, Any]) -> None:
    """Add (or replace) a non-controller owner reference to `owner` on `obj` (in place); same scope rules."""
    ref = _reference(owner)
    _validate_scope(owner, obj)
    _upsert(obj, ref)
