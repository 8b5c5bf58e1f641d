"""GET of one object, and LIST with resourceVersion rules, selectors, pagination, Table and metadata views."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Any

import orjson
from aiohttp import web

from kubesim.api import views
from kubesim.api.context import ApiContext, encode, json_response
from kubesim.api.request import Accept, Target, negotiate, query_int
from kubesim.api.selectors import make_filter, parse_field_selector, parse_label_selector
from kubesim.resources.types import ResourceType
from kubesim.status import errors
from kubesim.storage.store import Entry

JSON = dict[str, Any]
# what etcd3 storage answers for a compacted continue token; the Status carries a token to go on from "now"
_CONTINUE_INCONSISTENT = (
    "The provided continue parameter is too old to display a consistent list result. "
    "You can start a new list without the continue parameter, or use the continue token in this response "
    "to retrieve the remainder of the results. Continuing with the provided token results in an "
    "inconsistent list - objects that were created, modified, or deleted between the time the first chunk "
    "was returned and now may show up in the list."
)
LATEST = -1  # a continue token's rv meaning "continue at the current revision"
_LIST_TOO_OLD = "The resourceVersion for the provided list is too old."


def parse_rv(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise errors.bad_request(f"invalid resource version: {raw!r}") from None
    if value < 0:
        raise errors.bad_request(f"invalid resource version: {raw!r}")
    return value


def too_large(ctx: ApiContext, rv: int) -> errors.ApiError:
    err = errors.ApiError(
        504,
        "Timeout",
        f"Too large resource version: {rv}, current: {ctx.store.resource_version}",
        {
            "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
            "retryAfterSeconds": 1,
        },
    )
    return err


def selectors(request: web.Request, rtype: ResourceType) -> Any:
    label = parse_label_selector(request.query.get("labelSelector", ""))
    field = parse_field_selector(
        request.query.get("fieldSelector", ""), rtype.field_paths(), custom=rtype.crd is not None
    )
    return make_filter(label, field)


def encode_continue(rv: int, entry: Entry) -> str:
    return _continue_token(rv, (entry.namespace, entry.name))


def _continue_token(rv: int, start: tuple[str, str]) -> str:
    token = orjson.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": f"{start[0]}/{start[1]}\x00"})
    return base64.urlsafe_b64encode(token).decode().rstrip("=")


def _continue_expired(start: tuple[str, str]) -> errors.ApiError:
    err = errors.expired(_CONTINUE_INCONSISTENT)
    err.list_meta = {"continue": _continue_token(LATEST, start)}
    return err


def decode_continue(token: str) -> tuple[int, tuple[str, str]]:
    try:
        raw = orjson.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        rv, start = int(raw["rv"]), str(raw["start"]).rstrip("\x00")
        if raw.get("v") != "meta.k8s.io/v1" or "/" not in start or rv == 0:
            raise ValueError("bad version")
    except (binascii.Error, ValueError, KeyError, TypeError, orjson.JSONDecodeError):
        raise errors.bad_request(
            "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
        ) from None
    namespace, _, name = start.partition("/")
    return rv, (namespace, name)


def validate_list_options(request: web.Request, watch: bool) -> None:
    """apimachinery's ListOptions validation (422 with the real field paths)."""
    query = request.query
    rv, rvm, cont = (
        query.get("resourceVersion", ""),
        query.get("resourceVersionMatch", ""),
        query.get("continue"),
    )
    send_initial = query.get("sendInitialEvents")
    causes: list[JSON] = []

    def forbid(field: str, message: str) -> None:
        causes.append({"reason": "FieldValueForbidden", "message": f"Forbidden: {message}", "field": field})

    if rvm:
        if rvm not in ("Exact", "NotOlderThan"):
            causes.append(
                {
                    "reason": "FieldValueNotSupported",
                    "field": "resourceVersionMatch",
                    "message": f'Unsupported value: "{rvm}": supported values: "Exact", "NotOlderThan"',
                }
            )
        if watch and send_initial is None:
            forbid(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
            )
        elif not watch and not rv:
            forbid(
                "resourceVersionMatch", "resourceVersionMatch is forbidden unless resourceVersion is provided"
            )
        if cont:
            forbid("resourceVersionMatch", "resourceVersionMatch is forbidden when continue is provided")
        if rvm == "Exact" and rv == "0":
            forbid(
                "resourceVersionMatch", 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'
            )
    if send_initial is not None:
        if not watch:
            forbid("sendInitialEvents", "sendInitialEvents is forbidden for list")
        elif rvm != "NotOlderThan":
            forbid(
                "resourceVersionMatch",
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            )
    if causes:
        raise errors.list_options_invalid(causes)
    if cont and rv and rv != "0":
        raise errors.bad_request("specifying resource version is not allowed when using continue")


async def wait_until_fresh(ctx: ApiContext, request: web.Request) -> None:
    """A get/list asking for a resourceVersion the store has not reached waits a little for it, as the
    apiserver's watch cache does, then fails with 504 Too large resource version."""
    raw_rv = request.query.get("resourceVersion", "")
    if not raw_rv or raw_rv == "0" or request.query.get("continue"):
        return
    try:
        rv = int(raw_rv)
    except ValueError:
        return  # reported by the option checks
    if rv > ctx.store.resource_version and not await ctx.store.wait_for_revision(rv, ctx.too_new_wait):
        raise too_large(ctx, rv)


async def get_object(ctx: ApiContext, request: web.Request, target: Target) -> web.StreamResponse:
    accept = negotiate(request.headers.get("Accept"))
    await wait_until_fresh(ctx, request)
    raw_rv = request.query.get("resourceVersion", "")
    if raw_rv and raw_rv != "0" and parse_rv(raw_rv) > ctx.store.resource_version:
        raise too_large(ctx, parse_rv(raw_rv))
    rtype = target.rtype
    entry = ctx.store.entry(rtype.key, target.namespace, target.name)
    if entry is None:
        raise errors.not_found(rtype.plural, rtype.group, target.name)
    shaped = views.one(accept, rtype, entry.obj, request.query)
    return json_response(encode(rtype, entry) if shaped is None else shaped)


def list_entries(
    ctx: ApiContext, request: web.Request, target: Target
) -> tuple[list[Entry], int, str | None, int | None]:
    """The page to return: entries, the snapshot revision, the continue token and remainingItemCount."""
    validate_list_options(request, watch=False)
    rtype = target.rtype
    query = request.query
    namespace = None if target.all_namespaces or not rtype.namespaced else target.namespace
    limit = query_int(request, "limit") or 0
    raw_rv, rvm, cont = (
        query.get("resourceVersion", ""),
        query.get("resourceVersionMatch", ""),
        query.get("continue", ""),
    )
    keep = selectors(request, rtype)
    floor = ctx.store.floor(rtype.key)
    start: tuple[str, str] | None = None
    if cont:
        snapshot, start = decode_continue(cont)
        if snapshot == LATEST:
            snapshot = ctx.store.resource_version
        elif snapshot < floor:
            raise _continue_expired(start)
    elif raw_rv and raw_rv != "0" and (rvm == "Exact" or (limit > 0 and not rvm)):
        snapshot = parse_rv(raw_rv)
        if snapshot > ctx.store.resource_version:
            raise too_large(ctx, snapshot)
        if snapshot < floor:
            raise errors.expired(_LIST_TOO_OLD)
    else:
        if raw_rv and raw_rv != "0" and parse_rv(raw_rv) > ctx.store.resource_version:
            raise too_large(ctx, parse_rv(raw_rv))
        snapshot = ctx.store.resource_version
    if snapshot >= ctx.store.resource_version and limit > 0:
        return _page_of_current(ctx, rtype.key, namespace, start, keep, limit, snapshot)
    entries = ctx.store.list_at(rtype.key, snapshot, namespace)
    if start is not None:
        entries = [e for e in entries if (e.namespace, e.name) > start]
    if keep is not None:
        entries = [e for e in entries if keep(e.obj)]
    token, remaining = None, None
    if 0 < limit < len(entries):
        token = encode_continue(snapshot, entries[limit - 1])
        if keep is None:
            remaining = len(entries) - limit
        entries = entries[:limit]
    return entries, snapshot, token, remaining


def _page_of_current(
    ctx: ApiContext,
    resource: str,
    namespace: str | None,
    start: tuple[str, str] | None,
    keep: Callable[[JSON], bool] | None,
    limit: int,
    snapshot: int,
) -> tuple[list[Entry], int, str | None, int | None]:
    """One page of the current state, reading only as far as the page needs (not the whole resource)."""
    page: list[Entry] = []
    more = False
    for entry in ctx.store.iter_entries(resource, namespace, start):
        if keep is not None and not keep(entry.obj):
            continue
        if len(page) == limit:
            more = True
            break
        page.append(entry)
    if not more:
        return page, snapshot, None, None
    last = page[-1]
    remaining = None
    if keep is None:
        remaining = ctx.store.count_after(resource, namespace, (last.namespace, last.name))
    return page, snapshot, encode_continue(snapshot, last), remaining


async def list_objects(ctx: ApiContext, request: web.Request, target: Target) -> web.StreamResponse:
    accept: Accept = negotiate(request.headers.get("Accept"))
    await wait_until_fresh(ctx, request)
    entries, snapshot, token, remaining = list_entries(ctx, request, target)
    rtype = target.rtype
    meta: JSON = {"resourceVersion": str(snapshot)}
    if token:
        meta["continue"] = token
    if remaining is not None:
        meta["remainingItemCount"] = remaining
    if accept.as_kind:
        shaped = views.many(accept, rtype, meta, [e.obj for e in entries], request.query)
        if shaped is not None:
            return json_response(shaped)
    head = orjson.dumps({"kind": rtype.list_kind, "apiVersion": rtype.api_version, "metadata": meta})
    items = b",".join(encode(rtype, e) for e in entries)
    return json_response(head[:-1] + b',"items":[' + items + b"]}")
