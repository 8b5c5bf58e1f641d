"""DELETE and DELETECOLLECTION: DeleteOptions from body or query, preconditions, finalizers and
propagationPolicy, pod graceful deletion, dry run; namespaces and CRDs hand over to their cleanup."""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web

from kubesim import crd, errors, namespaces
from kubesim.admission import copy_json
from kubesim.context import ApiContext, json_response, success_status, to_view
from kubesim.handlers_read import list_entries
from kubesim.request import Target, decode_object, query_bool, query_int, read_body
from kubesim.store import format_time
from kubesim.types import ResourceType

JSON = dict[str, Any]
FOREGROUND, ORPHAN = "foregroundDeletion", "orphan"
_POLICIES = ("Foreground", "Background", "Orphan")


async def delete_options(ctx: ApiContext, request: web.Request) -> JSON:
    """DeleteOptions from the JSON body (kubectl) merged with query parameters (Python client)."""
    body = await read_body(request, ctx.max_body_bytes)
    options: JSON = {}
    if body.strip():
        options = decode_object(body, request.headers.get("Content-Type", ""), "DeleteOptions")
    query = request.query
    grace = query_int(request, "gracePeriodSeconds")
    if grace is not None:
        options["gracePeriodSeconds"] = grace
    if "propagationPolicy" in query:
        options["propagationPolicy"] = query["propagationPolicy"]
    if "orphanDependents" in query:
        options["orphanDependents"] = query_bool(request, "orphanDependents")
    if "dryRun" in query:
        options["dryRun"] = query.getall("dryRun")
    policy = options.get("propagationPolicy")
    if policy is not None and policy not in _POLICIES:
        raise errors.invalid(
            "DeleteOptions",
            "meta.k8s.io",
            "",
            [
                {
                    "reason": "FieldValueNotSupported",
                    "field": "propagationPolicy",
                    "message": f'Unsupported value: "{policy}": supported values: '
                    '"Foreground", "Background", "Orphan"',
                }
            ],
        )
    if policy is not None and options.get("orphanDependents") is not None:
        raise errors.invalid(
            "DeleteOptions",
            "meta.k8s.io",
            "",
            [
                {
                    "reason": "FieldValueInvalid",
                    "field": "propagationPolicy",
                    "message": 'Invalid value: "'
                    + policy
                    + '": orphanDependents and deletionPropagation cannot be '
                    "both set",
                }
            ],
        )
    return options


def _policy(rtype: ResourceType, options: JSON) -> str | None:
    policy = options.get("propagationPolicy")
    if policy is None and options.get("orphanDependents") is not None:
        policy = "Orphan" if options["orphanDependents"] else "Background"
    if policy is None and rtype.group == "batch" and rtype.plural == "jobs":
        policy = "Orphan"  # batch/v1 Jobs default to orphaning their pods
    return policy


def _grace(rtype: ResourceType, obj: JSON, options: JSON) -> int:
    """Pods: options or spec grace (default 30), but 0 when unscheduled or finished."""
    if rtype.plural != "pods" or rtype.group:
        return 0
    grace = options.get("gracePeriodSeconds")
    if grace is None:
        grace = (obj.get("spec") or {}).get("terminationGracePeriodSeconds", 30)
    if not (obj.get("spec") or {}).get("nodeName") or (obj.get("status") or {}).get("phase") in (
        "Succeeded",
        "Failed",
    ):
        return 0
    return max(0, int(grace))


def delete_one(
    ctx: ApiContext, rtype: ResourceType, namespace: str, name: str, options: JSON
) -> tuple[JSON, bool]:
    """Apply one delete; returns (object as it is now, whether it is gone)."""
    store = ctx.store
    entry = store.entry(rtype.key, namespace, name)
    if entry is None:
        raise errors.not_found(rtype.plural, rtype.group, name)
    preconditions = options.get("preconditions") or {}
    obj = copy_json(entry.obj)
    meta = obj["metadata"]
    uid, rv = preconditions.get("uid"), preconditions.get("resourceVersion")
    if uid is not None and uid != meta.get("uid"):
        raise errors.conflict(
            rtype.plural,
            rtype.group,
            name,
            f"Precondition failed: UID in precondition: {uid}, UID in object meta: {meta.get('uid')}",
        )
    if rv is not None and rv != meta.get("resourceVersion"):
        raise errors.conflict(
            rtype.plural,
            rtype.group,
            name,
            "Precondition failed: ResourceVersion in "
            f"precondition: {rv}, ResourceVersion in object meta: {meta.get('resourceVersion')}",
        )
    dry_run = "All" in (options.get("dryRun") or [])
    if rtype.plural == "namespaces" and not rtype.group:
        if name in namespaces.IMMORTAL:
            raise errors.forbidden("namespaces", "", name, "this namespace may not be deleted")
        return namespaces.begin_delete(ctx, obj, dry_run), False
    if rtype.plural == "customresourcedefinitions":
        return crd.begin_delete(ctx, obj, dry_run), False
    finalizers = list(meta.get("finalizers") or [])
    policy = _policy(rtype, options)
    if policy is not None:
        finalizers = [f for f in finalizers if f not in (FOREGROUND, ORPHAN)]
        if policy == "Foreground":
            finalizers.append(FOREGROUND)
        elif policy == "Orphan":
            finalizers.append(ORPHAN)
    grace = _grace(rtype, obj, options)
    now = ctx.clock()
    if finalizers or grace > 0:
        if finalizers:
            meta["finalizers"] = finalizers
        else:
            meta.pop("finalizers", None)
        if not meta.get("deletionTimestamp"):
            meta["deletionTimestamp"] = format_time(now + grace)
            if meta.get("generation", 0) > 0:
                meta["generation"] += 1
            meta["deletionGracePeriodSeconds"] = grace
        elif grace < int(meta.get("deletionGracePeriodSeconds") or 0):
            meta["deletionTimestamp"] = format_time(now + grace)  # a shorter grace period wins
            meta["deletionGracePeriodSeconds"] = grace
        if dry_run:
            return obj, False
        result = store.update(rtype.key, obj, check_resource_version=False)
        return result, store.entry(rtype.key, namespace, name) is None
    if dry_run:
        return obj, True
    return store.delete(rtype.key, namespace, name), True


def _respond(rtype: ResourceType, obj: JSON, gone: bool) -> web.Response:
    if gone and not rtype.return_deleted:
        return json_response(
            success_status(rtype, str(obj["metadata"]["name"]), str(obj["metadata"].get("uid")))
        )
    return json_response(to_view(rtype, obj))


async def delete_object(ctx: ApiContext, request: web.Request, target: Target) -> web.StreamResponse:
    options = await delete_options(ctx, request)
    obj, gone = delete_one(ctx, target.rtype, target.namespace, target.name, options)
    return _respond(target.rtype, obj, gone)


async def delete_collection(ctx: ApiContext, request: web.Request, target: Target) -> web.StreamResponse:
    options = await delete_options(ctx, request)
    entries, _snapshot, _token, _remaining = list_entries(ctx, request, target)
    rtype = target.rtype
    deleted: list[bytes] = []
    for entry in entries:
        try:
            obj, _gone = delete_one(ctx, rtype, entry.namespace, entry.name, options)
        except errors.ApiError as err:
            if err.code == 404:
                continue
            raise
        deleted.append(orjson.dumps(to_view(rtype, obj)))
    head = orjson.dumps(
        {
            "kind": rtype.list_kind,
            "apiVersion": rtype.api_version,
            "metadata": {"resourceVersion": str(ctx.store.resource_version)},
        }
    )
    return json_response(head[:-1] + b',"items":[' + b",".join(deleted) + b"]}")
