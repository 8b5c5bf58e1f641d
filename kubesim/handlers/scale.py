"""The scale subresource (autoscaling/v1 Scale) for ReplicaSets, Deployments and CRDs that declare it."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from kubesim.admission.pipeline import Write
from kubesim.api.context import ApiContext, json_response
from kubesim.api.request import Target, decode_object, media_type, read_body
from kubesim.api.selectors import label_selector_from_object
from kubesim.handlers.write import PATCH_TYPES, current_object
from kubesim.merge import patch
from kubesim.status import errors
from kubesim.storage.records import copy_json
from kubesim.validation.decode_types import decode_message, type_error

JSON = dict[str, Any]
SCALE_GVK = ("autoscaling", "v1", "Scale")


def _path_get(obj: JSON, path: str) -> Any:
    current: Any = obj
    for part in path.lstrip(".").split("."):
        if not isinstance(current, dict):
            return None
        current = current.get(part)
    return current


def _path_set(obj: JSON, path: str, value: Any) -> None:
    parts = path.lstrip(".").split(".")
    current = obj
    for part in parts[:-1]:
        current = current.setdefault(part, {})
    current[parts[-1]] = value


def to_scale(target: Target, parent: JSON) -> JSON:
    spec = target.rtype.scale
    assert spec is not None
    meta = parent["metadata"]
    scale_meta = {
        k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp") if k in meta
    }
    status: JSON = {"replicas": _path_get(parent, spec.status_replicas) or 0}
    if spec.label_selector:
        selector = _path_get(parent, spec.label_selector)
        text = label_selector_from_object(selector) if isinstance(selector, dict) else selector
        if text:
            status["selector"] = text
    replicas = _path_get(parent, spec.spec_replicas)
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": scale_meta,
        "spec": {"replicas": 1 if replicas is None else replicas},
        "status": status,
    }


async def get_scale(ctx: ApiContext, request: web.Request, target: Target) -> web.StreamResponse:
    return json_response(to_scale(target, current_object(ctx, target)))


async def write_scale(ctx: ApiContext, request: web.Request, target: Target) -> web.StreamResponse:
    write = Write(ctx, request, target)
    parent = current_object(ctx, target)
    current = to_scale(target, parent)
    body = await read_body(request, ctx.max_body_bytes)
    if request.method == "PUT":
        scale = decode_object(body, request.headers.get("Content-Type", ""), "Scale")
    else:
        content_type = media_type(request.headers.get("Content-Type"))
        if content_type not in PATCH_TYPES:
            raise errors.ApiError(
                415, "UnsupportedMediaType", "the body of the request was in an unknown format"
            )
        # may raise a PatchError
        scale = patch.apply_patch(copy_json(current), body, content_type, SCALE_GVK, owned=True)
    wrong = type_error(SCALE_GVK, scale)  # "3", 1.5, true or 2^31 are decoding errors of the Scale: 400
    if wrong:
        raise errors.bad_request(
            f'Scale in version "v1" cannot be handled as a Scale: {decode_message(wrong)}'
        )
    replicas = (scale.get("spec") or {}).get("replicas") or 0  # null decodes as Go's zero value
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        raise errors.invalid(
            "Scale",
            "autoscaling",
            target.name,
            [
                {
                    "reason": "FieldValueInvalid",
                    "field": "spec.replicas",
                    "message": f"Invalid value: {replicas}: must be greater than or equal to 0",
                }
            ],
        )
    sent_rv = (scale.get("metadata") or {}).get("resourceVersion")
    if sent_rv and sent_rv != parent["metadata"]["resourceVersion"]:
        raise errors.optimistic_lock(target.rtype.plural, target.rtype.group, target.name)
    updated = copy_json(parent)
    spec = target.rtype.scale
    assert spec is not None
    _path_set(updated, spec.spec_replicas, replicas)
    result = write.update(updated, parent, "scale")  # managedFields: an Update entry with subresource scale
    return json_response(to_scale(target, result))
