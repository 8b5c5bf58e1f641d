"""WATCH: resume from history or start with synthetic ADDED events, selector transitions, bookmarks,
timeouts, streaming lists (sendInitialEvents), 410 as an ERROR event, Table and metadata-only streams."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

import orjson
from aiohttp import web

from kubesim.api import table
from kubesim.api.context import ApiContext, encode, multi_version, to_view
from kubesim.api.request import Accept, Target, negotiate, parse_bool, query_bool, query_int
from kubesim.handlers.read import parse_rv, selectors, too_large, validate_list_options
from kubesim.registry.crd import CRD_KEY
from kubesim.resources.types import ResourceType
from kubesim.status import errors
from kubesim.storage.records import Subscription
from kubesim.storage.store import Entry, WatchEvent
from kubesim.storage.watch import WatchStream

JSON = dict[str, Any]
INITIAL_EVENTS_END = "k8s.io/initial-events-end"
_LIVENESS_POLL = 5.0  # how often an idle watch checks that its client is still there (at least)


class Encoder:
    """Turns (type, entry) into one wire line for this watcher's representation."""

    def __init__(self, rtype: ResourceType, accept: Accept, include: str = "Metadata") -> None:
        self.rtype = rtype
        self.accept = accept
        self.plain = not accept.as_kind and rtype.store_group is None and not multi_version(rtype)
        self.headers_sent = False
        self.include = include

    def line(self, event_type: str, entry: Entry, event: WatchEvent | None = None) -> bytes:
        if self.plain and event is not None and event.entry is entry:
            return event.line(event_type)
        if not self.accept.as_kind:
            cache_key = ("view", self.rtype.api_version, event_type)
            if event is not None and event.entry is entry and cache_key in event.cache:
                return event.cache[cache_key]
            data = b'{"type":"' + event_type.encode() + b'","object":' + encode(self.rtype, entry) + b"}\n"
            if event is not None and event.entry is entry:
                event.cache[cache_key] = data
            return data
        obj = to_view(self.rtype, entry.obj)
        if self.accept.as_kind == "Table":
            wrapped = table.to_table(
                self.rtype, [obj], str(entry.rv), None, not self.headers_sent, self.include
            )
            self.headers_sent = True
        else:
            wrapped = table.partial(obj)
        return orjson.dumps({"type": event_type, "object": wrapped}) + b"\n"

    def bookmark(self, rv: int, initial_end: bool = False) -> bytes:
        meta: JSON = {"resourceVersion": str(rv)}
        if initial_end:
            meta["annotations"] = {INITIAL_EVENTS_END: "true"}
        if self.accept.as_kind:
            kind, api_version = "PartialObjectMetadata", "meta.k8s.io/v1"
        else:
            kind, api_version = self.rtype.kind, self.rtype.api_version
        obj = {"kind": kind, "apiVersion": api_version, "metadata": meta}
        return orjson.dumps({"type": "BOOKMARK", "object": obj}) + b"\n"


def _with_rv(entry: Entry, rv: int) -> Entry:
    """The previous object content at the revision that made it stop matching."""
    obj = dict(entry.obj)
    obj["metadata"] = {**entry.obj.get("metadata", {}), "resourceVersion": str(rv)}
    return Entry(obj, orjson.dumps(obj), rv)


async def watch_objects(ctx: ApiContext, request: web.Request, target: Target) -> web.StreamResponse:
    validate_list_options(request, watch=True)
    accept = negotiate(request.headers.get("Accept"))
    rtype = target.rtype
    query = request.query
    timeout = query_int(request, "timeoutSeconds")
    bookmarks = query_bool(request, "allowWatchBookmarks")
    send_initial = parse_bool(query.get("sendInitialEvents"), "sendInitialEvents")
    raw_rv = query.get("resourceVersion", "")
    start_rv = parse_rv(raw_rv) if raw_rv else 0
    keep = selectors(request, rtype)
    if target.name:
        only, by_name = target.name, keep
        keep = lambda obj: obj["metadata"]["name"] == only and (by_name is None or by_name(obj))  # noqa: E731
    namespace = None if target.all_namespaces or not rtype.namespaced else target.namespace
    encoder = Encoder(rtype, accept, table.include_object(query) if accept.as_kind == "Table" else "Metadata")
    store = ctx.store
    # A streaming list waits for its RV as the cacher does (waitUntilWatchCacheFreshAndForceAllEvents), then
    # fails in-stream; a plain watch from a future RV is accepted and waits for events, as upstream.
    future = None
    too_new = send_initial and start_rv > store.resource_version
    if too_new and not await store.wait_for_revision(start_rv, ctx.too_new_wait):
        future = too_large(ctx, start_rv)
    stream = ctx.watches.open()
    min_rv = start_rv

    def deliver(event: WatchEvent, push: Callable[[bytes], None] = stream.push) -> None:
        entry = event.entry
        if entry.rv <= min_rv or (namespace is not None and entry.namespace != namespace):
            return
        if keep is None:
            push(encoder.line(event.type, entry, event))
            return
        now_ok = keep(event.obj)
        was_ok = event.old is not None and event.type == "MODIFIED" and keep(event.old.obj)
        if event.type == "MODIFIED" and was_ok and not now_ok:
            assert event.old is not None
            push(encoder.line("DELETED", _with_rv(event.old, event.rv)))
        elif now_ok:
            etype = "ADDED" if event.type == "MODIFIED" and not was_ok else event.type
            push(encoder.line(etype, event.entry, event))

    # Initial events (the state, or a replay from history) never count toward the slow-watcher limit.
    def initial_state() -> None:
        for entry in store.entries(rtype.key, namespace):
            if keep is None or keep(entry.obj):
                stream.push_initial(encoder.line("ADDED", entry))

    # Everything up to the subscription runs without yielding, so no event can fall in between.
    try:
        if future is not None:
            raise future
        if send_initial:
            initial_state()
            min_rv = store.resource_version
            stream.push_initial(encoder.bookmark(store.resource_version, initial_end=True))
        elif send_initial is False or raw_rv not in ("", "0"):
            if raw_rv not in ("", "0"):
                for event in store.events_since(rtype.key, start_rv):
                    deliver(event, stream.push_initial)
            min_rv = max(start_rv, store.resource_version)
        else:
            initial_state()
            min_rv = store.resource_version
    except errors.ApiError as err:
        if err.code not in (410, 504):
            ctx.watches.release(stream)
            raise
        stream.close(orjson.dumps({"type": "ERROR", "object": err.status()}) + b"\n")
    subscription = store.subscribe(rtype.key, deliver)
    definition = _end_with_definition(ctx, rtype, stream)
    try:
        return await _serve(ctx, request, stream, encoder, timeout, bookmarks)
    finally:
        subscription.close()
        if definition is not None:
            definition.close()
        ctx.watches.release(stream)


def _end_with_definition(ctx: ApiContext, rtype: ResourceType, stream: WatchStream) -> Subscription | None:
    """A custom resource's watches end when its CRD is gone, as the API server tears the resource's storage
    down (apiextensions-apiserver's crdHandler.removeDeadStorage): clients relist and then see the 404."""
    if rtype.crd is None:
        return None
    name = rtype.crd["metadata"]["name"]

    def on_crd(event: WatchEvent) -> None:
        if event.type == "DELETED" and event.entry.name == name:
            stream.close()

    return ctx.store.subscribe(CRD_KEY, on_crd)


def _pending_then_bookmark(ctx: ApiContext, stream: WatchStream, encoder: Encoder) -> bytes:
    """The events queued since the last drain, then a bookmark. Read together, with no await in between: the
    store commits and pushes to the streams on this loop, so every event up to the bookmark's resourceVersion
    goes out before it. (Events pushed while the previous batch's write waited on a slow client would
    otherwise follow a bookmark that already covers them, or be cut off by the timeout after it.)"""
    return stream.drain() + encoder.bookmark(ctx.store.resource_version)


async def _serve(
    ctx: ApiContext, request: web.Request, stream: Any, encoder: Encoder, timeout: int | None, bookmarks: bool
) -> web.StreamResponse:
    response = web.StreamResponse(
        status=200, headers={"Content-Type": "application/json", "Cache-Control": "no-cache, private"}
    )
    response.enable_chunked_encoding()
    await response.prepare(request)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout if timeout and timeout > 0 else None
    next_bookmark = loop.time() + ctx.bookmark_interval if bookmarks else None
    next_poll = loop.time() + _LIVENESS_POLL
    try:
        while True:
            wake = next_poll
            if deadline is not None:
                wake = min(wake, deadline)
            if next_bookmark is not None:
                wake = min(wake, next_bookmark)
            await stream.wait_until(wake)
            data = stream.drain()
            if data:
                await response.write(data)
            if stream.closed:
                if stream.error:
                    await response.write(stream.error)
                break
            now = loop.time()
            if deadline is not None and now >= deadline:
                if bookmarks:
                    await response.write(_pending_then_bookmark(ctx, stream, encoder))
                break
            if next_bookmark is not None and now >= next_bookmark:
                await response.write(_pending_then_bookmark(ctx, stream, encoder))
                next_bookmark = now + ctx.bookmark_interval
            if now >= next_poll:
                next_poll = now + _LIVENESS_POLL
            transport = request.transport
            if transport is None or transport.is_closing():
                break
        with contextlib.suppress(ConnectionError, RuntimeError):
            await response.write_eof()
    except (ConnectionError, RuntimeError):
        pass  # the client went away
    finally:
        stream.stop_timer()
    return response
