"""PATCH bodies: JSON patch (RFC 6902), JSON merge patch (RFC 7386) and strategic merge patch.

`apply_patch(current, body, content_type, gvk)` returns a patched deep copy of `current` and never mutates it
(with `owned=True` the caller hands `current` over and it is patched in place).
Server-side apply (`application/apply-patch+yaml`) is not a patch here: it goes to `kubesim.merge.apply`.

Errors are `PatchError(code, reason, message, details=None)`, an ApiError (`.status()`: the Status body):
- 415 UnsupportedMediaType: unknown patch type, or a strategic merge patch on a custom resource (the real
  message lists the accepted media types);
- 400 BadRequest: a body that does not decode (not JSON, a JSON patch that is not a list of operations, a
  merge/strategic patch that is not an object, an unknown `$patch` directive);
- 422 Invalid: a JSON patch operation that does not apply (failed `test`, missing path), as the apiserver
  reports it: the generic message "the server rejected our request due to an error in our request" and
  empty details (kubectl prints "The request is invalid: ...").

Strategic merge patch follows the OpenAPI extensions from `kubesim.schema.schemas`: lists whose
`x-kubernetes-patch-strategy` contains `merge` merge by `x-kubernetes-patch-merge-key` (lists of primitives
such as finalizers merge as sets), other lists are replaced, maps merge recursively and `null` deletes.
Directives, never stored: `$patch: replace|merge|delete` (map level and list elements), `$retainKeys`,
`$setElementOrder/<list>`, `$deleteFromPrimitiveList/<list>`.
Limits: directives are checked only for unknown `$patch` values; items lacking their merge key are appended.
"""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import orjson

from kubesim.schema import schemas
from kubesim.status import errors

JSON = dict[str, Any]
GVK = tuple[str, str, str]

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
_BUILTIN_TYPES = (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, APPLY_PATCH)
_CUSTOM_TYPES = (JSON_PATCH, MERGE_PATCH, APPLY_PATCH)

_DIRECTIVE = "$patch"
_RETAIN_KEYS = "$retainKeys"
_ORDER_PREFIX = "$setElementOrder/"
_DELETE_PRIMITIVE_PREFIX = "$deleteFromPrimitiveList/"


class PatchError(errors.ApiError):
    """A patch that cannot be applied: an ApiError (code, reason, message, optional details)."""


def unsupported_patch_type(accepted: tuple[str, ...]) -> PatchError:
    return PatchError(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - "
        "accepted media types include: " + ", ".join(accepted),
    )


def accepted_patch_types(gvk: GVK) -> tuple[str, ...]:
    return _BUILTIN_TYPES if schemas.is_builtin(gvk) else _CUSTOM_TYPES


def apply_patch(current: JSON, body: bytes, content_type: str, gvk: GVK, *, owned: bool = False) -> JSON:
    """Return the patched copy of `current`; raise PatchError on failure. `owned`: the caller hands
    `current` over (a private copy it will not use again), so it is patched in place instead of copied."""
    media_type = content_type.split(";")[0].strip().lower()
    accepted = accepted_patch_types(gvk)
    if media_type not in accepted or media_type == APPLY_PATCH:
        raise unsupported_patch_type(accepted)
    try:
        patch = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        # the merge-patch library has its own word for it; the others surface the JSON decoder's error
        message = "Invalid JSON Patch" if media_type == MERGE_PATCH else f"invalid JSON in the patch: {exc}"
        raise PatchError(400, "BadRequest", message) from exc
    if media_type == JSON_PATCH:
        return _json_patch(current if owned else copy.deepcopy(current), patch)
    if not isinstance(patch, dict):
        raise PatchError(
            400,
            "BadRequest",
            f"json: cannot unmarshal {_go_type(patch)} into Go value of type map[string]interface {{}}",
        )
    if media_type == MERGE_PATCH:
        result = _merge_owned(current, patch) if owned else merge_patch(current, patch)
        return result if isinstance(result, dict) else {}
    merged = _merge_map(current if owned else copy.deepcopy(current), patch, schemas.root(gvk))
    return merged if merged is not None else {}


def _go_type(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    return "number" if isinstance(value, int | float) else "object"


def _json_patch(current: JSON, operations: Any) -> JSON:
    """Apply `operations` to `current` (owned: changed in place)."""
    if not isinstance(operations, list) or not all(isinstance(op, dict) for op in operations):
        raise PatchError(
            400,
            "BadRequest",
            f"json: cannot unmarshal {_go_type(operations)} into Go value of type jsonpatch.Patch",
        )
    result: Any = current
    for operation in operations:  # one at a time, so that the failing operation can be named in the note
        try:
            result = jsonpatch.JsonPatch([operation]).apply(result, in_place=True)
        except jsonpatch.InvalidJsonPatch as exc:
            raise PatchError(400, "BadRequest", f"invalid JSON patch: {exc}") from exc
        except (
            jsonpatch.JsonPatchException,
            jsonpatch.JsonPointerException,
            KeyError,
            IndexError,
            TypeError,
        ) as exc:
            raise _unprocessable(operation) from exc
    if not isinstance(result, dict):
        raise _unprocessable({"result": "not an object"})
    return result


def _unprocessable(operation: JSON) -> PatchError:
    """A JSON-patch operation that does not apply (failed `test`, missing path): the apiserver answers 422
    with a generic message and drops the library's error text (the failing operation is kept here only as
    the Python-side context)."""
    error = PatchError(422, "Invalid", "the server rejected our request due to an error in our request", {})
    error.add_note(f"failing operation: {operation}")
    return error


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, `null` deletes, anything else (lists too) replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _merge_owned(target: Any, patch: Any) -> Any:
    """`merge_patch` of a target and a patch both owned by the caller (freshly decoded): merged in place,
    nothing copied."""
    if not isinstance(patch, dict):
        return patch
    result = target if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _merge_owned(result.get(key), value)
    return result


def strategic_merge(original: JSON, patch: JSON, schema: JSON | None) -> JSON:
    """Strategic merge of `patch` into a copy of `original` using `schema` (a kubesim.schema.schemas node)."""
    merged = _merge_map(copy.deepcopy(original), patch, schema)
    return merged if merged is not None else {}


def _merge_map(original: JSON, patch: JSON, schema: JSON | None) -> JSON | None:
    """Merge into `original` (owned, mutated). None means "delete this map" (`$patch: delete`)."""
    directive = patch.get(_DIRECTIVE)
    if directive == "delete":
        return None
    if directive == "replace":
        return _merge_map({}, {k: v for k, v in patch.items() if k != _DIRECTIVE}, schema)
    if directive not in (None, "merge"):
        raise PatchError(400, "BadRequest", f"Unknown patch type: {directive} in map: {patch}")
    retain = patch.get(_RETAIN_KEYS)
    if isinstance(retain, list):
        for key in [k for k in original if k not in retain]:
            del original[key]
    orders: dict[str, list[Any]] = {}
    for key, value in patch.items():
        if key.startswith(_DELETE_PRIMITIVE_PREFIX):
            field = key.removeprefix(_DELETE_PRIMITIVE_PREFIX)
            if isinstance(original.get(field), list) and isinstance(value, list):
                original[field] = [item for item in original[field] if item not in value]
        elif key.startswith(_ORDER_PREFIX) and isinstance(value, list):
            orders[key.removeprefix(_ORDER_PREFIX)] = value
    server_lists = {field: list(original.get(field) or []) for field in orders}
    for key, value in patch.items():
        if key.startswith("$"):
            continue
        field_schema = schemas.child(schema, key)
        if value is None:
            original.pop(key, None)
        elif isinstance(value, dict):
            base = original.get(key)
            merged = _merge_map(base if isinstance(base, dict) else {}, value, field_schema)
            if merged is None:
                original.pop(key, None)
            else:
                original[key] = merged
        elif isinstance(value, list):
            base_list = original.get(key)
            original[key] = _merge_list(base_list if isinstance(base_list, list) else [], value, field_schema)
        else:
            original[key] = value
    for field, order in orders.items():
        if isinstance(original.get(field), list):
            info = schemas.field_info(schemas.child(schema, field))
            original[field] = _ordered(original[field], order, server_lists[field], info)
    return original


def _merge_list(original: list[Any], patch: list[Any], schema: JSON | None) -> list[Any]:
    info = schemas.field_info(schema)
    strategy = (info.patch_strategy or "").split(",")
    element_schema = schemas.items(schema)
    if "merge" not in strategy:
        return _merge_list_replacing(patch, element_schema)
    if any(isinstance(item, dict) and item.get(_DIRECTIVE) == "replace" for item in patch):
        return _merge_list_replacing(
            [i for i in patch if not (isinstance(i, dict) and _DIRECTIVE in i)], element_schema
        )
    if info.merge_key is None:  # a set of primitives, e.g. finalizers
        result = list(original)
        for item in patch:
            if item not in result:
                result.append(copy.deepcopy(item))
        return result
    key = info.merge_key
    result = list(original)
    for item in patch:
        if not isinstance(item, dict):
            raise PatchError(400, "BadRequest", f"cannot merge non-map element {item} by merge key {key}")
        position = next(
            (
                i
                for i, old in enumerate(result)
                if isinstance(old, dict) and key in item and old.get(key) == item[key]
            ),
            None,
        )
        if item.get(_DIRECTIVE) == "delete":
            result = [old for old in result if not (isinstance(old, dict) and old.get(key) == item.get(key))]
            continue
        if position is None:
            merged = _merge_map({}, item, element_schema)
            if merged is not None:
                result.append(merged)
        else:
            merged = _merge_map(result[position], item, element_schema)
            if merged is None:
                del result[position]
            else:
                result[position] = merged
    return result


def _merge_list_replacing(patch: list[Any], element_schema: JSON | None) -> list[Any]:
    """A replaced list: its map elements still go through the merger so that no directive is stored."""
    result: list[Any] = []
    for item in patch:
        if isinstance(item, dict):
            merged = _merge_map({}, item, element_schema)
            if merged is not None:
                result.append(merged)
        else:
            result.append(copy.deepcopy(item))
    return result


def _ordered(items: list[Any], order: list[Any], server: list[Any], info: schemas.FieldInfo) -> list[Any]:
    """Order a merged list as `$setElementOrder` says: the listed items in that order, interleaved with the
    items only the server has, which keep their places relative to the listed ones that the server had."""

    def identity(item: Any) -> bytes:
        if info.merge_key is not None and isinstance(item, dict):
            return orjson.dumps(item.get(info.merge_key))
        return orjson.dumps(item)

    rank = {identity(entry): i for i, entry in enumerate(order)}
    server_rank = {identity(entry): i for i, entry in enumerate(server)}
    listed = sorted((i for i in items if identity(i) in rank), key=lambda i: rank[identity(i)])
    server_only = sorted(
        (i for i in items if identity(i) not in rank), key=lambda i: server_rank.get(identity(i), len(server))
    )
    result: list[Any] = []
    while listed and server_only:
        left, right = server_rank.get(identity(server_only[0])), server_rank.get(identity(listed[0]))
        if left is not None and right is not None and left < right:
            result.append(server_only.pop(0))
        else:
            result.append(listed.pop(0))
    return result + server_only + listed
