"""The reflector keeps a sink (the informer) equal to the API server's state: client-go's ListAndWatch.

Semantics (client-go `tools/cache/reflector.go`):
- the first list asks for resourceVersion "0" (served from the watch cache), relists ask for the last
  seen one, and after a 410 / too-large-RV answer to a list the next list is a consistent read (RV "");
- paging by 500 for consistent reads and when the first RV="0" list came back paginated; otherwise no limit
  so the watch cache serves the list (`listing.Pager`);
- a streaming list (watch with sendInitialEvents, ended by the `k8s.io/initial-events-end` bookmark) is tried
  first when enabled; any failure falls back to a plain list, and a server that never answers that way is
  remembered per client (`watchlist`);
- watches carry allowWatchBookmarks and a random 5-10 min timeoutSeconds, and no client read timeout (the
  read deadline below does its job);
  a stream silent for longer than its read deadline (`deadline`: an idle timeout above the server's bookmark
  interval, or the timeout plus a margin) is dead: it counts as a failure and is reopened at once from the
  last RV;
  a stream that ends normally is reopened at once from the last RV; 429 backs off and re-watches; 410, a
  refused connection (the server may be back with a new history) and other errors end the cycle: back off,
  then relist; a bookmark or a list below the synced RV is a new history (`history`): relist at RV "";
- a watch that closes within a second without a single event is an error ("very short watch");
- backoff 800 ms doubling to 30 s with jitter, reset after 2 quiet minutes; a backoff wait ends early when
  the API server probe sees the server answer again (`wakeup`).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any

import structlog

from manager.apimachinery.objects import Obj
from manager.apimachinery.resources import GroupVersionResource
from manager.client.errors import ApiError, NotFound, TooManyRequests, is_expired
from manager.client.http11 import ConnectError
from manager.client.managedfields import decode_watch_span_stripped
from manager.client.rest import ApiClient
from manager.client.watch import Span, WatchEvent, WatchStream, decode_watch_span, is_blank, span_bytes
from manager.informers import metrics
from manager.informers.backoff import Backoff
from manager.informers.deadline import ReadDeadline, SilentWatchError, read_deadline
from manager.informers.history import NewHistory, check_list, report
from manager.informers.ingest import ReflectorSink, consume_events
from manager.informers.listing import Pager
from manager.informers.wakeup import RetrySignal
from manager.informers.watchlist import (
    WatchListFailed,
    collect_initial_events,
    mark_watch_list_unsupported,
    watch_list_supported,
)

log = structlog.get_logger(__name__)

MIN_WATCH_TIMEOUT = 300
CONNECTION_ERRORS = (TimeoutError, OSError)  # ConnectError and Disconnected are OSErrors


class VeryShortWatchError(Exception):
    """The watch closed in under a second with no event: treated as an error (back off, relist)."""


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
        deadline: ReadDeadline | None = None,
        wakeup: RetrySignal | None = None,
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
        # The sink discards metadata.managedFields: watch lines and list pages are decoded without them.
        self.decode_span: Callable[[bytes, int, int], WatchEvent] = (
            decode_watch_span_stripped if strip_managed_fields else decode_watch_span
        )
        self.pager = Pager(
            self._fetch_page,
            page_size,
            on_expired=self._count_expired,
            strip_managed_fields=strip_managed_fields,
        )
        self.use_watch_list = use_watch_list
        self.watch_list_timeout = watch_list_timeout
        self.min_watch_timeout = min_watch_timeout  # client-go ignores < 5 min; tests use short ones
        self.backoff = backoff or Backoff(clock=clock)
        self.deadline = deadline or ReadDeadline()
        self.wakeup = wakeup or RetrySignal()  # the informer factory shares one between its reflectors
        self._silence_limit = self.deadline.limit(min_watch_timeout)
        self._clock = clock
        self._rng = rng or random.Random()
        self._sleep = sleep
        self.last_sync_resource_version = ""
        self._last_sync_unavailable = False
        # liveness
        self.last_activity: float | None = None
        self.failing_since: float | None = None
        self.last_error: str | None = None
        self.resource_missing = False  # the last list/watch got a 404: the resource is not served
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
            await self._back_off()

    async def _back_off(self) -> None:
        """Wait the backoff's next delay, or less if the API server is seen answering again."""
        if await self.wakeup.sleep(self.backoff.next_delay(), self._sleep):
            log.debug("API server answers again: retrying now", resource=self.name)

    async def list_and_watch(self) -> None:
        stream: WatchStream | None = None
        if self.use_watch_list and watch_list_supported(self.client):
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
        self.resource_missing = isinstance(exc, NotFound)
        metrics.ERRORS.labels(*self._labels).inc()
        log.warning("list/watch failed", resource=self.name, error=self.last_error)

    def _record_success(self) -> None:
        self.failing_since = None
        self.last_error = None
        self.resource_missing = False
        self.last_activity = self._clock()

    # ------------------------------------------------------------------ list
    def _relist_resource_version(self) -> str:
        if self._last_sync_unavailable:
            return ""
        return self.last_sync_resource_version or "0"

    async def _list(self) -> None:
        rv = self._relist_resource_version()
        try:
            items, list_rv = await self.pager.list_all(rv)
        except ApiError as exc:
            if not is_expired(exc):
                raise
            self._count_expired()
            self._last_sync_unavailable = True
            items, list_rv = await self.pager.list_all("")  # consistent read, at once
        self._last_sync_unavailable = False
        restarted = check_list(self.name, self.last_sync_resource_version, list_rv, items, self.sink.cached)
        await self.sink.replace(items, list_rv)
        if restarted:
            self.sink.history_restarted()
        self.last_sync_resource_version = list_rv
        self.lists += 1
        metrics.RELISTS.labels(*self._labels).inc()
        self._record_success()

    def _fetch_page(self, rv: str | None, limit: int | None, continue_token: str | None) -> Awaitable[bytes]:
        return self.client.list_raw(
            self.gvr,
            self.namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            resource_version=rv,
            limit=limit,
            continue_token=continue_token,
            metadata_only=self.metadata_only,
        )

    def _count_expired(self) -> None:
        self.expired += 1
        metrics.EXPIRED.labels(*self._labels).inc()

    # ------------------------------------------------------------------ streaming list
    def _open_watch(self, rv: str, **extra: Any) -> WatchStream:
        timeout = int(self.min_watch_timeout * (1 + self._rng.random()))
        self._silence_limit = self.deadline.limit(timeout)
        return self.client.watch(
            self.gvr,
            self.namespace,
            resource_version=rv,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            timeout_seconds=timeout,
            allow_watch_bookmarks=True,
            metadata_only=self.metadata_only,
            read_timeout=False,  # guarded by the read deadline (_consume) and the watch-list timeout
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
            except (TimeoutError, WatchListFailed):
                await stream.aclose()
                mark_watch_list_unsupported(self.client)
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
        """Replace the sink with the stream's initial events, up to the end bookmark (see watchlist)."""
        items, end_rv = await collect_initial_events(stream, self._decode, self.watch_list_timeout)
        restarted = check_list(self.name, self.last_sync_resource_version, end_rv, items, self.sink.cached)
        await self.sink.replace(items, end_rv)
        if restarted:
            self.sink.history_restarted()
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
            except (ConnectError, TooManyRequests) as exc:
                # Throttled: back off, watch again. Refused: relist (a restarted server: new history?).
                self._record_error(exc)
                await stream.aclose()
                if isinstance(exc, ConnectError):
                    return
                await self._back_off()
                continue
            except SilentWatchError as exc:
                self._record_error(exc)  # a failure of its own (not a "very short watch"): reopen at once
                continue
            except NewHistory as exc:
                report(self.name, exc.last, exc.current, "watch")
                self._last_sync_unavailable = True  # list with a consistent read, not from the old RV
                return
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
        opened = self._clock()

        def last_heard() -> float:
            return max(opened, self.last_activity or opened)

        async with read_deadline(self._silence_limit, last_heard, clock=self._clock):
            await stream.open()
            self._record_success()
            self.watching = True
            try:
                await self._consume_events(stream)
            finally:
                self.watching = False

    async def _consume_events(self, stream: WatchStream) -> None:
        await consume_events(self, stream, self._clock)
