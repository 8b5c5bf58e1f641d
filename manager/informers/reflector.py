"""The reflector keeps a sink (the informer) equal to the API server's state: client-go's ListAndWatch.

Semantics (client-go `tools/cache/reflector.go`):
- the first list asks for resourceVersion "0" (served from the watch cache), relists ask for the last
  seen one, and after a 410 / too-large-RV answer to a list the next list is a consistent read (RV "");
- paging by 500 for consistent reads and when the first RV="0" list came back paginated; otherwise no limit
  so the watch cache serves the list;
- a streaming list (watch with sendInitialEvents, ended by the `k8s.io/initial-events-end` bookmark) is tried
  first when enabled; any failure falls back to a plain list, and a server that never answers that way is
  remembered per client;
- watches carry allowWatchBookmarks and a random 5-10 min timeoutSeconds (plus the client's read timeout);
  a stream that ends normally is reopened at once from the last RV; 429 and refused connections back off and
  re-watch without relisting; 410 and other errors end the cycle: back off, then relist;
- a watch that closes within a second without a single event is an error ("very short watch");
- backoff 800 ms doubling to 30 s with jitter, reset after 2 quiet minutes.
"""

from __future__ import annotations

import asyncio
import random
import time
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import aiohttp
import orjson
import structlog

from manager.client.errors import ApiError, TooManyRequests, error_from_status, is_expired
from manager.client.managedfields import decode_watch_span_stripped
from manager.client.rest import ApiClient
from manager.client.watch import Span, WatchEvent, WatchStream, decode_watch_span, is_blank, span_bytes
from manager.informers import metrics
from manager.informers.backoff import Backoff
from manager.informers.gcpolicy import GC_POLICY
from manager.resources import GroupVersionResource

log = structlog.get_logger(__name__)

Obj = dict[str, Any]
PAGE_SIZE = 500
MIN_WATCH_TIMEOUT = 300
INITIAL_EVENTS_END = "k8s.io/initial-events-end"
CONNECTION_ERRORS = (aiohttp.ClientError, TimeoutError, OSError)

# Clients whose server did not complete a streaming list: do not try again (the fallback is a plain list).
_watch_list_unsupported: weakref.WeakSet[ApiClient] = weakref.WeakSet()


class ReflectorSink(Protocol):
    """Where the reflector delivers state: the informer."""

    async def replace(self, items: list[Obj], resource_version: str) -> None: ...

    def apply_events(self, events: list[tuple[str, Obj]]) -> None: ...

    def record_bad_object(self, obj: object, error: Exception) -> None: ...


class VeryShortWatchError(Exception):
    """The watch closed in under a second with no event: treated as an error (back off, relist)."""


class _WatchListFailed(Exception):
    pass


class Reflector:
    """List-then-watch loop for one resource and selector set. `await run()` until cancelled."""

    def __init__(
        self,
        client: ApiClient,
        gvr: GroupVersionResource,
        sink: ReflectorSink,
        *,
        name: str | None = None,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        metadata_only: bool = False,
        strip_managed_fields: bool = False,
        page_size: int | None = None,
        use_watch_list: bool = False,
        watch_list_timeout: float = 10.0,
        min_watch_timeout: int = MIN_WATCH_TIMEOUT,
        backoff: Backoff | None = None,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.client = client
        self.gvr = gvr
        self.sink = sink
        self.name = name or str(gvr)
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.metadata_only = metadata_only
        # The sink discards metadata.managedFields: watch lines are decoded without them (same result).
        self.decode_span: Callable[[bytes, int, int], WatchEvent] = (
            decode_watch_span_stripped if strip_managed_fields else decode_watch_span
        )
        self.page_size = page_size
        self.use_watch_list = use_watch_list
        self.watch_list_timeout = watch_list_timeout
        self.min_watch_timeout = min_watch_timeout  # client-go ignores < 5 min; tests use short ones
        self.backoff = backoff or Backoff(clock=clock)
        self._clock = clock
        self._rng = rng or random.Random()
        self._sleep = sleep
        self.last_sync_resource_version = ""
        self._last_sync_unavailable = False
        self._paginated_result = False
        # liveness
        self.last_activity: float | None = None
        self.failing_since: float | None = None
        self.last_error: str | None = None
        self.lists = 0
        self.expired = 0
        self.watches = 0
        self.received = 0  # events of the current watch stream
        self.watching = False  # a watch stream is open right now
        self._labels = (self.name,)

    # ------------------------------------------------------------------ main loop
    async def run(self) -> None:
        while True:
            try:
                await self.list_and_watch()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # every failure: back off, then list again
                self._record_error(exc)
            await self._sleep(self.backoff.next_delay())

    async def list_and_watch(self) -> None:
        stream: WatchStream | None = None
        if self.use_watch_list and self.client not in _watch_list_unsupported:
            try:
                stream = await self._watch_list()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.info("streaming list failed, falling back to list", resource=self.name, error=str(exc))
                stream = None
        if stream is None:
            await self._list()
        await self._watch(stream)

    def _record_error(self, exc: BaseException) -> None:
        now = self._clock()
        if self.failing_since is None:
            self.failing_since = now
        self.last_error = f"{type(exc).__name__}: {exc}"
        metrics.ERRORS.labels(*self._labels).inc()
        log.warning("list/watch failed", resource=self.name, error=self.last_error)

    def _record_success(self) -> None:
        self.failing_since = None
        self.last_error = None
        self.last_activity = self._clock()

    # ------------------------------------------------------------------ list
    def _relist_resource_version(self) -> str:
        if self._last_sync_unavailable:
            return ""
        return self.last_sync_resource_version or "0"

    async def _list(self) -> None:
        rv = self._relist_resource_version()
        try:
            items, list_rv = await self._list_pages(rv)
        except ApiError as exc:
            if not is_expired(exc):
                raise
            self._count_expired()
            self._last_sync_unavailable = True
            items, list_rv = await self._list_pages("")  # consistent read, at once
        self._last_sync_unavailable = False
        await self.sink.replace(items, list_rv)
        self.last_sync_resource_version = list_rv
        self.lists += 1
        metrics.RELISTS.labels(*self._labels).inc()
        self._record_success()

    def _page_limit(self, rv: str) -> int | None:
        if self.page_size:
            return self.page_size
        if self._paginated_result:
            return PAGE_SIZE
        if rv not in ("", "0"):
            return None  # let the watch cache serve it, no thundering herd on etcd
        return PAGE_SIZE

    async def _list_pages(self, rv: str) -> tuple[list[Obj], str]:
        limit = self._page_limit(rv)
        items: list[Obj] = []
        continue_token: str | None = None
        first = True
        list_rv = ""
        while True:
            try:
                raw = await self.client.list_raw(
                    self.gvr,
                    self.namespace,
                    label_selector=self.label_selector,
                    field_selector=self.field_selector,
                    resource_version=rv if first else None,
                    limit=limit,
                    continue_token=continue_token,
                    metadata_only=self.metadata_only,
                )
            except ApiError as exc:
                if is_expired(exc) and not first:
                    # The continue token expired mid-way: take one full list at the same RV instead.
                    self._count_expired()
                    return await self._list_unpaged(rv)
                raise
            with GC_POLICY.paused():
                page = orjson.loads(raw)
            page_items = page.get("items") or []
            GC_POLICY.ingested(len(page_items))  # freeze the decoded pages before GC walks them again
            meta = page.get("metadata") or {}
            items.extend(page_items)
            list_rv = meta.get("resourceVersion") or list_rv
            continue_token = meta.get("continue") or None
            if first and rv == "0" and continue_token:
                self._paginated_result = True  # the watch cache is off: keep paging from now on
            first = False
            if not continue_token:
                return items, list_rv

    async def _list_unpaged(self, rv: str) -> tuple[list[Obj], str]:
        raw = await self.client.list_raw(
            self.gvr,
            self.namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            resource_version=rv,
            metadata_only=self.metadata_only,
        )
        with GC_POLICY.paused():
            page = orjson.loads(raw)
        return page.get("items") or [], (page.get("metadata") or {}).get("resourceVersion", "")

    def _count_expired(self) -> None:
        self.expired += 1
        metrics.EXPIRED.labels(*self._labels).inc()

    # ------------------------------------------------------------------ streaming list
    def _open_watch(self, rv: str, **extra: Any) -> WatchStream:
        timeout = int(self.min_watch_timeout * (1 + self._rng.random()))
        return self.client.watch(
            self.gvr,
            self.namespace,
            resource_version=rv,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            timeout_seconds=timeout,
            allow_watch_bookmarks=True,
            metadata_only=self.metadata_only,
            **extra,
        )

    async def _watch_list(self) -> WatchStream:
        """Watch with sendInitialEvents; replace the sink at the end bookmark; return the open stream."""
        while True:
            rv = "" if self._last_sync_unavailable else self.last_sync_resource_version
            stream = self._open_watch(rv, send_initial_events=True, resource_version_match="NotOlderThan")
            try:
                await self._initial_events(stream)
            except ApiError as exc:
                await stream.aclose()
                if is_expired(exc) and not self._last_sync_unavailable:
                    self._count_expired()
                    self._last_sync_unavailable = True
                    continue
                raise
            except (TimeoutError, _WatchListFailed):
                await stream.aclose()
                _watch_list_unsupported.add(self.client)
                raise
            except BaseException:
                await stream.aclose()
                raise
            self._last_sync_unavailable = False
            self.lists += 1
            metrics.RELISTS.labels(*self._labels).inc()
            self._record_success()
            return stream

    async def _initial_events(self, stream: WatchStream) -> None:
        """Collect the initial ADDED events; fail when no ADDED arrives for `watch_list_timeout` seconds
        before the end bookmark (a server that ignores sendInitialEvents never sends it)."""
        loop = asyncio.get_running_loop()
        items: list[Obj] = []
        paused = GC_POLICY.paused
        end_rv: str | None = None
        async with asyncio.timeout(self.watch_list_timeout) as deadline:
            async for spans in stream.spans():
                before = len(items)
                with paused():
                    for index, span in enumerate(spans):
                        event = self._decode(span)
                        if event is not None:
                            end_rv = self._initial_event(items, *event)
                            if end_rv is not None:
                                stream.unread(spans[index + 1 :])
                                break
                if end_rv is not None:
                    break
                if len(items) > before:  # progress; plain bookmarks do not count
                    GC_POLICY.ingested(len(items) - before)
                    deadline.reschedule(loop.time() + self.watch_list_timeout)
        if end_rv is None:
            raise _WatchListFailed("stream ended before the initial-events-end bookmark")
        await self.sink.replace(items, end_rv)
        self.last_sync_resource_version = end_rv

    def _decode(self, span: Span) -> tuple[str, Obj] | None:
        try:
            return self.decode_span(*span)
        except ValueError as exc:
            self._bad_line(span, exc)
            return None

    def _bad_line(self, span: Span, exc: ValueError) -> None:
        """An undecodable line: reported to the sink, unless it is empty or blank (not an event at all)."""
        if not is_blank(*span):
            self.sink.record_bad_object(span_bytes(span, 200), exc)

    def _initial_event(self, items: list[Obj], event_type: str, obj: Obj) -> str | None:
        """Collect one initial event; return the list's resourceVersion at the end bookmark."""
        if event_type == "ADDED":
            items.append(obj)
        elif event_type == "BOOKMARK":
            meta = obj.get("metadata") or {}
            if (meta.get("annotations") or {}).get(INITIAL_EVENTS_END) == "true":
                return str(meta.get("resourceVersion") or "")
        elif event_type == "ERROR":
            raise error_from_status(obj)
        else:
            raise _WatchListFailed(f"unexpected {event_type} before the end of the initial events")
        return None

    # ------------------------------------------------------------------ watch
    async def _watch(self, initial: WatchStream | None) -> None:
        """Watch from the last RV until an error that needs a relist; reopen after normal ends."""
        pending = initial
        while True:
            stream = pending or self._open_watch(self.last_sync_resource_version)
            pending = None
            self.watches += 1
            metrics.WATCH_RESTARTS.labels(*self._labels).inc()
            started = self._clock()
            self.received = 0
            try:
                await self._consume(stream)
            except (aiohttp.ClientConnectorError, TooManyRequests) as exc:
                # Refused connection or throttled: back off and watch again, without relisting.
                self._record_error(exc)
                await stream.aclose()
                await self._sleep(self.backoff.next_delay())
                continue
            except ApiError as exc:
                if not is_expired(exc):
                    raise
                self._count_expired()
                log.debug("watch expired, relisting", resource=self.name, rv=self.last_sync_resource_version)
                return
            except CONNECTION_ERRORS as exc:
                # A broken stream: reopen from the last RV (the server may simply have dropped us).
                log.debug("watch stream broken", resource=self.name, error=str(exc))
            finally:
                await stream.aclose()
            if self.received == 0 and self._clock() - started < 1.0:
                raise VeryShortWatchError("watch closed within a second without any event")

    async def _consume(self, stream: WatchStream) -> None:
        await stream.open()
        self._record_success()
        self.watching = True
        try:
            await self._consume_events(stream)
        finally:
            self.watching = False

    async def _consume_events(self, stream: WatchStream) -> None:
        # Hot path: one network read's lines are decoded and applied in one synchronous block (one call
        # into the informer, one clock read, one counter update per read); the GC policy keeps the
        # collector from ever walking the new cache objects (see gcpolicy).
        sink_apply = self.sink.apply_events
        decode = self.decode_span
        clock = self._clock
        gc_policy = GC_POLICY
        async for spans in stream.spans():
            events: list[tuple[str, Obj]] = []
            append = events.append
            error: ApiError | None = None
            # The read's last resourceVersion is looked up once after the loop, not per event; the last
            # bookmark's is kept with the number of events before it (the ones after it come later).
            bookmark_rv = None
            bookmarked_at = 0
            paused = gc_policy.begin_batch()
            try:
                for buffer, start, end in spans:
                    try:
                        event = decode(buffer, start, end)
                    except ValueError as exc:
                        self._bad_line((buffer, start, end), exc)
                        continue
                    event_type = event[0]
                    if event_type == "BOOKMARK":
                        self.received += 1
                        rv = (event[1].get("metadata") or {}).get("resourceVersion")
                        if rv:
                            bookmark_rv, bookmarked_at = rv, len(events)
                    elif event_type == "ERROR":
                        error = error_from_status(event[1])
                        break
                    else:
                        append(event)
                # Before the sink runs, as before: a transform may replace or change the objects.
                rv = _last_resource_version(events, bookmarked_at) or bookmark_rv
                if events:
                    self.received += len(events)
                    sink_apply(events)
                if rv:
                    self.last_sync_resource_version = rv
            finally:
                gc_policy.end_batch(paused)
            if error is not None:
                raise error
            self.last_activity = clock()


def _last_resource_version(events: list[tuple[str, Obj]], after: int) -> Any:
    """The last non-empty `metadata.resourceVersion` among `events[after:]`, else None."""
    for index in range(len(events) - 1, after - 1, -1):
        meta = events[index][1].get("metadata")
        if type(meta) is dict:
            rv = meta.get("resourceVersion")
            if rv:
                return rv
    return None
