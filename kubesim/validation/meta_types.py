"""Wrongly typed ObjectMeta fields, found as Go's JSON decoder finds them (400 BadRequest with its
`UnmarshalTypeError` text: the owning struct, then the field's JSON path without list indices; a time that
does not parse gets time.Parse's text, as metav1.Time decodes itself). Written out
by hand rather than walked from the schema: metadata differs on every write, so this is on the hot path."""

from __future__ import annotations

from typing import Any

from kubesim.validation.gotime import time_error

JSON = dict[str, Any]
_STRINGS = {
    "name": "string",
    "generateName": "string",
    "namespace": "string",
    "selfLink": "string",
    "uid": "types.UID",
    "resourceVersion": "string",
}
_TIMES = ("creationTimestamp", "deletionTimestamp")
_OWNER_REFERENCE = {
    "apiVersion": "string",
    "kind": "string",
    "name": "string",
    "uid": "types.UID",
    "controller": "bool",
    "blockOwnerDeletion": "bool",
}
_MANAGED_FIELDS_ENTRY = {
    "manager": "string",
    "operation": "v1.ManagedFieldsOperationType",
    "apiVersion": "string",
    "time": "string",
    "fieldsType": "string",
    "subresource": "string",
}


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _error(value: Any, struct: str, path: str, go_type: str) -> str:
    return f"cannot unmarshal {_json_kind(value)} into Go struct field {struct}.{path} of type {go_type}"


def _fits(value: Any, go_type: str) -> bool:
    if go_type == "bool":
        return isinstance(value, bool)
    return isinstance(value, str)  # every other scalar here is a string type


def _entries(items: Any, path: str, struct: str, fields: dict[str, str], go_type: str) -> str | None:
    if not isinstance(items, list):
        return _error(items, "ObjectMeta", path, "[]" + go_type)
    for item in items:
        if item is None:
            continue
        if not isinstance(item, dict):
            return _error(item, "ObjectMeta", path, go_type)
        for key, value in item.items():
            wanted = fields.get(key)
            if wanted is not None and value is not None and not _fits(value, wanted):
                return _error(value, struct, f"{path}.{key}", wanted)
            if key == "time" and isinstance(value, str) and time_error(value):  # a managedFields entry's
                return time_error(value)
    return None


# how `_passes` checks each field `_first_error` checks (the other fields are not checked at all)
_STRING, _TIME, _STRING_MAP, _INT64, _STRING_LIST, _OWNERS, _MANAGED = range(7)
_QUICK = {name: _STRING for name in _STRINGS} | {name: _TIME for name in _TIMES}
_QUICK |= {"labels": _STRING_MAP, "annotations": _STRING_MAP, "finalizers": _STRING_LIST}
_QUICK |= {"generation": _INT64, "deletionGracePeriodSeconds": _INT64}
_QUICK |= {"ownerReferences": _OWNERS, "managedFields": _MANAGED}


def meta_type_error(meta: Any, kind: str) -> str | None:
    """The first decode error in an object's metadata (the text after `json: `), or None."""
    if isinstance(meta, dict) and _passes(meta):
        return None
    return _first_error(meta, kind)


def _passes(meta: JSON) -> bool:
    """Whether `_first_error` finds nothing, told by one pass over the fields the metadata holds (most hold a
    few of the fields checked); any doubt is left to `_first_error`, which reports the first error in its
    order."""
    for name, value in meta.items():
        how = _QUICK.get(name)
        if how is None or value is None:
            continue
        if how == _STRING:
            if value.__class__ is not str:
                return False
        elif how == _TIME:
            if value.__class__ is not str or time_error(value):
                return False
        elif how == _STRING_MAP:
            if value.__class__ is not dict or any(
                v is not None and v.__class__ is not str for v in value.values()
            ):
                return False
        elif how == _INT64:
            if value.__class__ is not int:
                return False
        elif how == _STRING_LIST:
            if value.__class__ is not list or any(v is not None and v.__class__ is not str for v in value):
                return False
        elif how == _OWNERS:
            path = "metadata.ownerReferences"
            if _entries(value, path, "OwnerReference", _OWNER_REFERENCE, "v1.OwnerReference"):
                return False
        elif _entries(
            value,
            "metadata.managedFields",
            "ManagedFieldsEntry",
            _MANAGED_FIELDS_ENTRY,
            "v1.ManagedFieldsEntry",
        ):
            return False
    return True


def _first_error(meta: Any, kind: str) -> str | None:
    if not isinstance(meta, dict):
        return _error(meta, kind, "metadata", "v1.ObjectMeta")
    for name, go_type in _STRINGS.items():
        value = meta.get(name)
        if value is not None and not isinstance(value, str):
            return _error(value, "ObjectMeta", f"metadata.{name}", go_type)
    for name in _TIMES:
        value = meta.get(name)
        if value is not None:
            found = (
                time_error(value)
                if isinstance(value, str)
                else _error(value, "ObjectMeta", f"metadata.{name}", "string")
            )
            if found:
                return found
    for name in ("labels", "annotations"):
        found = _string_map(meta.get(name), f"metadata.{name}")
        if found:
            return found
    for name in ("generation", "deletionGracePeriodSeconds"):
        value = meta.get(name)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            return _error(value, "ObjectMeta", f"metadata.{name}", "int64")
    finalizers = meta.get("finalizers")
    if finalizers is not None:
        if not isinstance(finalizers, list):
            return _error(finalizers, "ObjectMeta", "metadata.finalizers", "[]string")
        for item in finalizers:
            if item is not None and not isinstance(item, str):
                return _error(item, "ObjectMeta", "metadata.finalizers", "string")
    owners = meta.get("ownerReferences")
    if owners is not None:
        found = _entries(
            owners, "metadata.ownerReferences", "OwnerReference", _OWNER_REFERENCE, "v1.OwnerReference"
        )
        if found:
            return found
    managed = meta.get("managedFields")
    if managed is not None:
        path, struct = "metadata.managedFields", "ManagedFieldsEntry"
        return _entries(managed, path, struct, _MANAGED_FIELDS_ENTRY, "v1.ManagedFieldsEntry")
    return None


def _string_map(value: Any, path: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        return _error(value, "ObjectMeta", path, "map[string]string")
    for item in value.values():
        if item is not None and not isinstance(item, str):
            return _error(item, "ObjectMeta", path, "string")
    return None
