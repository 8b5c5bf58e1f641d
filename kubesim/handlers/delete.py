"""DELETE and DELETECOLLECTION: DeleteOptions from the body or the query, validated, then handed to
kubesim.registry.deletion; the response is the object or a Success Status."""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web

from kubesim.api import views
from kubesim.api.context import ApiContext, encode, json_response, success_status, to_view
from kubesim.api.request import Accept, Target, decode_object, negotiate, query_bool, query_int, read_body
from kubesim.handlers.read import list_entries
from kubesim.registry.deletion import delete_one
from kubesim.registry.propagation import delete_warning
from kubesim.resources.types import ResourceType
from kubesim.status import errors

JSON = dict[str, Any]
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


def _respond(
    rtype: ResourceType, obj: JSON, gone: bool, accept: Accept, request: web.Request, options: JSON
) -> web.Response:
    if gone and not rtype.return_deleted:
        return json_response(
            success_status(rtype, str(obj["metadata"]["name"]), str(obj["metadata"].get("uid")))
        )
    shaped = views.one(accept, rtype, obj, request.query)
    # upstream answers 202 for an object left in place only when orphanDependents=false was asked
    status = 202 if not gone and options.get("orphanDependents") is False else 200
    return json_response(to_view(rtype, obj) if shaped is None else shaped, status)


def _warn(response: web.Response | errors.ApiError, warning: str | None) -> None:
    """The Job registry adds its warning before deleting: it comes with a 404 or 409 as well."""
    if warning is not None:
        escaped = warning.replace('"', '\\"')
        if isinstance(response, errors.ApiError):
            response.headers["Warning"] = f'299 - "{escaped}"'
        else:
            response.headers.add("Warning", f'299 - "{escaped}"')


async def delete_object(ctx: ApiContext, request: web.Request, target: Target) -> web.StreamResponse:
    accept = negotiate(request.headers.get("Accept"))
    options = await delete_options(ctx, request)
    warning = delete_warning(target.rtype, options)
    try:
        obj, gone = delete_one(ctx, target.rtype, target.namespace, target.name, options)
        response = _respond(target.rtype, obj, gone, accept, request, options)
    except errors.ApiError as err:
        _warn(err, warning)
        raise
    _warn(response, warning)
    return response


async def delete_collection(ctx: ApiContext, request: web.Request, target: Target) -> web.StreamResponse:
    accept = negotiate(request.headers.get("Accept"))
    options = await delete_options(ctx, request)
    warning = delete_warning(target.rtype, options)
    try:
        response = _delete_items(ctx, request, target, options, accept)
    except errors.ApiError as err:
        _warn(err, warning)
        raise
    _warn(response, warning)
    return response


def _delete_items(
    ctx: ApiContext, request: web.Request, target: Target, options: JSON, accept: Accept
) -> web.Response:
    """Each listed item deleted with the same options (so the same propagation); the answer is the list as
    it was listed, before the deletes, as the generic registry's DeleteCollection returns it."""
    entries, snapshot, token, remaining = list_entries(ctx, request, target)
    rtype = target.rtype
    for entry in entries:
        try:
            delete_one(ctx, rtype, entry.namespace, entry.name, options)
        except errors.ApiError as err:
            if err.code != 404:
                raise
    meta: JSON = {"resourceVersion": str(snapshot)}
    if token:
        meta["continue"] = token
    if remaining is not None:
        meta["remainingItemCount"] = remaining
    shaped = (
        views.many(accept, rtype, meta, [e.obj for e in entries], request.query) if accept.as_kind else None
    )
    if shaped is not None:
        return json_response(shaped)
    head = orjson.dumps({"kind": rtype.list_kind, "apiVersion": rtype.api_version, "metadata": meta})
    items = b",".join(encode(rtype, entry) for entry in entries)
    return json_response(head[:-1] + b',"items":[' + items + b"]}")
