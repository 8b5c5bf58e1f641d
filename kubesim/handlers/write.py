"""POST (create), PUT (update) and PATCH (JSON/merge/strategic/apply) of objects and their status."""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web

from kubesim.admission.pipeline import Write, gvk_of
from kubesim.api.context import ApiContext, to_view
from kubesim.api.request import (
    Target,
    check_kind,
    check_meta_types,
    decode_object,
    flow_depth,
    media_type,
    read_body,
)
from kubesim.merge import apply, patch
from kubesim.registry import crd
from kubesim.status import errors
from kubesim.storage.records import Entry, copy_json
from kubesim.validation.common import immutable
from kubesim.validation.decode_types import type_error
from kubesim.validation.nesting import MAX_DEPTH, deeper_than

JSON = dict[str, Any]
APPLY_PATCH = "application/apply-patch+yaml"
PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    APPLY_PATCH,
    "application/apply-patch+cbor",
)


def from_status(status: JSON) -> errors.ApiError:
    return errors.ApiError(
        int(status.get("code", 500)),
        str(status.get("reason", "")),
        str(status.get("message", "")),
        status.get("details"),
    )


def _after_write(ctx: ApiContext, write: Write, result: JSON) -> None:
    if write.rtype.plural == "customresourcedefinitions" and not write.dry_run:
        crd.reconcile(ctx, str(result["metadata"]["name"]))


async def create_object(ctx: ApiContext, request: web.Request, target: Target) -> web.StreamResponse:
    write = Write(ctx, request, target)
    obj = await write.read_object()
    result = write.create(obj)
    _after_write(ctx, write, result)
    return write.respond(result, 201)


def current_object(ctx: ApiContext, target: Target) -> JSON:
    """The stored object the request names (404 when there is none)."""
    return current_entry(ctx, target).obj


def current_entry(ctx: ApiContext, target: Target) -> Entry:
    """The store's entry of the object the request names (404 when there is none)."""
    rtype = target.rtype
    entry = ctx.store.entry(rtype.key, target.namespace, target.name)
    if entry is None:
        raise errors.not_found(rtype.plural, rtype.group, target.name)
    return entry


def _check_identity(target: Target, obj: JSON) -> None:
    meta = obj.setdefault("metadata", {})
    if meta.get("name") and meta["name"] != target.name:
        raise errors.bad_request(
            f"the name of the object ({meta['name']}) does not match the name on the URL ({target.name})"
        )
    if not meta.get("name"):
        meta["name"] = target.name
    if target.rtype.namespaced:
        if meta.get("namespace") and meta["namespace"] != target.namespace:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        meta["namespace"] = target.namespace


async def update_object(ctx: ApiContext, request: web.Request, target: Target) -> web.StreamResponse:
    write = Write(ctx, request, target)
    obj = await write.read_object()
    _check_identity(target, obj)
    old = current_object(ctx, target)
    sub = target.subresource or None
    result = write.update(obj, old, sub)
    _after_write(ctx, write, result)
    return write.respond(result)


def _reject_force(request: web.Request, is_apply: bool) -> None:
    if "force" in request.query and not is_apply:
        raise errors.invalid(
            "PatchOptions",
            "meta.k8s.io",
            "",
            [
                {
                    "reason": "FieldValueForbidden",
                    "field": "force",
                    "message": "Forbidden: may not be specified for non-apply patch",
                }
            ],
        )


def _check_uid_kept(target: Target, patched: JSON, old: JSON) -> None:
    """A patch that changes metadata.uid fails update validation (422 immutable). A PUT body's uid is a
    precondition instead (409), checked by the update strategy; the garbage collector relies on the former
    when it patches a dependent with its uid, so that a recreated namesake is left alone."""
    uid = (patched.get("metadata") or {}).get("uid")
    if uid and uid != old["metadata"].get("uid"):
        rtype = target.rtype
        raise errors.invalid(rtype.kind, rtype.group, target.name, [immutable("metadata.uid", uid)])


async def patch_object(ctx: ApiContext, request: web.Request, target: Target) -> web.StreamResponse:
    rtype = target.rtype
    content_type = media_type(request.headers.get("Content-Type"))
    accepted = patch.accepted_patch_types(gvk_of(rtype))  # custom resources: no strategic merge patch
    if content_type not in accepted:
        raise patch.unsupported_patch_type(accepted)
    write = Write(ctx, request, target)
    is_apply = content_type == APPLY_PATCH
    _reject_force(request, is_apply)
    body = await read_body(request, ctx.max_body_bytes)
    sub = target.subresource or None
    if is_apply:
        return await _apply(ctx, write, request, target, body, sub)
    if flow_depth(body) > MAX_DEPTH:  # the patch code recurses: refuse before it can hit RecursionError
        raise errors.bad_request(f"invalid JSON in the patch: exceeded max depth {MAX_DEPTH}")
    stored = current_entry(ctx, target)
    old = stored.obj
    viewed = to_view(rtype, old)
    # this request's own copy: decoded from the stored bytes (the object's encoding) when no view changes it
    current = orjson.loads(stored.data) if viewed is old else copy_json(viewed)
    # a PatchError is an ApiError; `current` is this request's own copy
    patched = patch.apply_patch(current, body, content_type, write.gvk, owned=True)
    if not isinstance(patched, dict):
        raise errors.bad_request("the patch did not produce an object")
    if deeper_than(
        patched
    ):  # a JSON patch can move or copy a subtree below itself, past what the store takes
        raise errors.bad_request(f"the patched object is too deep: exceeded max depth {MAX_DEPTH}")
    check_meta_types(patched, rtype.kind, rtype.version)
    if sub in (None, "status"):
        # The patched document is decoded into the endpoint's type, as kube-apiserver does: a patch that
        # removed apiVersion/kind gets them back, one that changed them to another type is refused.
        check_kind(patched, rtype)
    _check_identity(target, patched)
    if sub is None:
        _check_uid_kept(target, patched, old)
    result = write.update(patched, old, sub)
    _after_write(ctx, write, result)
    return write.respond(result)


def _sent_gvk(obj: JSON) -> tuple[str, str, str]:
    """The group, version and kind an applied object names, as Go's unstructured accessors read them (an
    apiVersion that does not parse as group/version counts as empty)."""
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    api_version = api_version if isinstance(api_version, str) else ""
    group, _, version = api_version.rpartition("/")
    if api_version.count("/") > 1 or (api_version and not version):
        group = version = ""
    return group, version, kind if isinstance(kind, str) else ""


async def _apply(
    ctx: ApiContext, write: Write, request: web.Request, target: Target, body: bytes, sub: str | None
) -> web.StreamResponse:
    rtype = target.rtype
    if not request.query.get("fieldManager"):
        raise errors.invalid(
            "PatchOptions",
            "meta.k8s.io",
            "",
            [
                {
                    "reason": "FieldValueRequired",
                    "field": "fieldManager",
                    "message": "Required value: is required for apply patch",
                }
            ],
        )
    applied = decode_object(body, "application/yaml", rtype.kind, rtype.version)
    sent = _sent_gvk(applied)
    if sent != (rtype.group, rtype.version, rtype.kind):  # upstream's versionCheckManager: no defaulting
        raise errors.bad_request(f"invalid object type: {sent[0]}/{sent[1]}, Kind={sent[2]}")
    if applied["metadata"].get("managedFields") is not None:  # the server owns them; upstream refuses too
        raise errors.bad_request("metadata.managedFields must be nil")
    wrong = type_error(write.gvk, applied)
    if wrong:  # upstream's fieldmanager types the applied object before any merge or ownership conflict
        gv = f"{rtype.group}/{rtype.version}" if rtype.group else rtype.version
        where = f"{target.namespace}/{target.name}; {gv}, Kind={rtype.kind}"
        raise errors.bad_request(f"failed to create typed patch object ({where}): {wrong}")
    _check_identity(target, applied)
    force = bool(request.query.get("force") in ("1", "t", "T", "true", "True", "TRUE"))
    entry = ctx.store.entry(rtype.key, target.namespace, target.name)
    live = copy_json(to_view(rtype, entry.obj)) if entry is not None else None
    if live is None and sub is not None:
        raise errors.not_found(rtype.plural, rtype.group, target.name)
    try:
        merged = apply.server_side_apply(live, applied, write.manager, force, write.gvk, sub, now=write.now())
    except apply.ApplyConflict as exc:
        raise from_status(exc.status) from None
    if entry is None:
        result = write.create(merged, record_fields=False)
        _after_write(ctx, write, result)
        return write.respond(result, 201)
    merged.setdefault("metadata", {}).setdefault("resourceVersion", str(entry.rv))
    result = write.update(merged, entry.obj, sub, record_fields=False)
    _after_write(ctx, write, result)
    return write.respond(result)
