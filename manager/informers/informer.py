"""SharedInformer: one reflector, one indexed cache, many handlers — each on its own task and buffer.

Ingest path per network read of a watch (designed for the 100k-pod budget): each line is decoded once by
orjson, the transform pops `metadata.managedFields` in place, the key is built, the object is assigned into
the cache dict and its notification appended to one flat batch list; the batch is then appended to each
handler's deque (one append per handler per read). No copies, no per-event logging, no awaits.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypedDict, cast

import structlog

from manager.apimachinery.objects import Obj, object_key
from manager.apimachinery.resources import GroupVersionResource, ObjT
from manager.client.rest import ApiClient
from manager.informers import metrics
from manager.informers.gcpolicy import GC_POLICY
from manager.informers.handlers import DeletedFinalStateUnknown, EventHandler
from manager.informers.listener import ADD as _ADD
from manager.informers.listener import DELETE as _DELETE
from manager.informers.listener import SYNCED as _SYNCED
from manager.informers.listener import UPDATE as _UPDATE
from manager.informers.listener import HandlerRegistration, notify, replay_batch
from manager.informers.lister import Lister
from manager.informers.reflector import Reflector
from manager.informers.store import Indexer, IndexFunc
from manager.informers.transform import (
    Transform,
    drops_managed_fields,
    project_metadata,
    strip_managed_fields,
)

log = structlog.get_logger(__name__)

_REPLACE_CHUNK = 1000  # objects applied between two yields to the loop during a list


class Selectors(TypedDict, total=False):
    """What narrows an informer: with its resource, what makes it one informer and not another."""

    namespace: str | None
    label_selector: str | None
    field_selector: str | None
    metadata_only: bool


class SharedInformer(Generic[ObjT]):
    """A shared, indexed cache of one resource (optionally filtered), kept current by a reflector.

    Add handlers at any time: a handler added after the initial list first receives every cached object as
    `on_add(obj, is_in_initial_list=True)`. Read the cache through `lister`, typed after the resource's
    parameter, or `indexer` (plain dicts, with `add_indexers`); objects are shared: never mutate them.
    """

    def __init__(
        self,
        client: ApiClient,
        gvr: GroupVersionResource[ObjT],
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        metadata_only: bool = False,
        transform: Transform | None = None,
        indexers: dict[str, IndexFunc] | None = None,
        use_watch_list: bool = False,
        name: str | None = None,
        stale_after: float = 900.0,
        failure_grace: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
        **reflector_options: Any,
    ) -> None:
        self.gvr = gvr
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.metadata_only = metadata_only
        self.name = name or informer_name(gvr, namespace, label_selector, field_selector, metadata_only)
        self.indexer = Indexer(indexers)
        default = project_metadata if metadata_only else strip_managed_fields
        self._transform: Transform = transform or default
        self._listeners: list[HandlerRegistration] = []
        self._history_listeners: list[Callable[[], None]] = []
        self._synced = False
        self._replacing = False
        self._synced_event = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._started = False
        self._clock = clock
        self.stale_after = stale_after
        self.failure_grace = failure_grace
        self.decode_errors = 0
        self.handler_errors = 0
        # Reflector and handlers see the informer through weak proxies: no reference cycle, so a dropped
        # informer (and its cache) is freed by reference counting even after gc.freeze() (see gcpolicy).
        proxy = weakref.proxy(self)
        self.reflector = Reflector(
            client,
            gvr,
            proxy,
            name=self.name,
            namespace=namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            metadata_only=metadata_only,
            strip_managed_fields=drops_managed_fields(self._transform),
            use_watch_list=use_watch_list,
            clock=clock,
            **reflector_options,
        )
        # Gauges read the informer through a weak reference: the metrics registry must not keep a stopped
        # informer's cache alive.
        ref = weakref.ref(self)

        def read(value: Callable[[SharedInformer[Any]], float]) -> Callable[[], float]:
            return lambda: value(informer) if (informer := ref()) is not None else 0.0

        labels = (self.name,)
        metrics.OBJECTS.labels(*labels).set_function(read(lambda i: float(len(i.indexer))))
        metrics.SYNCED.labels(*labels).set_function(read(lambda i: 1.0 if i._synced else 0.0))
        metrics.LAST_ACTIVITY_AGE.labels(*labels).set_function(read(lambda i: i._activity_age()))

    # ------------------------------------------------------------------ handlers
    @property
    def lister(self) -> Lister[ObjT]:
        """The cache, read as the resource's object type (the same objects as `indexer`)."""
        return cast("Lister[ObjT]", self.indexer)

    def add_event_handler(
        self, handler: EventHandler, resync_period: float = 0.0, *, inline: bool = False
    ) -> HandlerRegistration:
        """Register a handler (before or after start). `resync_period` > 0 replays the cache periodically.

        `inline=True` is for cheap synchronous handlers (read caches, enqueue keys): they are called as each
        event is applied instead of from their own task (see listener), at the price of their isolation."""
        registration = HandlerRegistration(weakref.proxy(self), handler, resync_period, inline)
        if self._synced or self._replacing:
            # The cache as it stands; the rest of a list being applied right now follows as usual.
            registration.push_batch(replay_batch(_ADD, self.indexer.list(), False))
        if self._synced:
            registration.push(_SYNCED, None, None)
        self._listeners.append(registration)
        if self._started:
            registration.start()
        return registration

    async def remove_event_handler(self, registration: HandlerRegistration) -> None:
        if registration in self._listeners:
            self._listeners.remove(registration)
        await registration.stop()

    def handler_count(self) -> int:
        """How many handlers are registered."""
        return len(self._listeners)

    def add_indexers(self, indexers: dict[str, IndexFunc]) -> None:
        self.indexer.add_indexers(indexers)

    def resync(self) -> None:
        """Replay the cache to every handler as `on_update(obj, obj)`; the API server is not contacted."""
        batch = replay_batch(_UPDATE, self.indexer.list(), True)
        for listener in self._listeners:
            listener.push_batch(batch)

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Start the reflector and the handler tasks (idempotent; needs a running loop)."""
        if self._started:
            return
        self._started = True
        for listener in self._listeners:
            listener.start()
        self._task = asyncio.get_running_loop().create_task(
            self.reflector.run(), name=f"reflector-{self.name}"
        )

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        await asyncio.gather(*(listener.stop() for listener in self._listeners))
        self._started = False

    def has_synced(self) -> bool:
        """The cache holds a complete initial list (client-go's HasSynced)."""
        return self._synced

    async def wait_for_cache_sync(self, timeout: float | None = None) -> bool:
        try:
            await asyncio.wait_for(self._synced_event.wait(), timeout)
        except TimeoutError:
            return False
        return True

    @property
    def last_sync_resource_version(self) -> str:
        return self.reflector.last_sync_resource_version

    # ------------------------------------------------------------------ health
    def _activity_age(self) -> float:
        last = self.reflector.last_activity
        return 0.0 if last is None else self._clock() - last

    def health(self) -> str | None:
        """None when healthy; otherwise why this informer cannot be trusted (for readiness checks)."""
        reflector = self.reflector
        now = self._clock()
        if not self._synced:
            return f"{self.name}: not synced" + (f" ({reflector.last_error})" if reflector.last_error else "")
        if reflector.failing_since is not None and now - reflector.failing_since > self.failure_grace:
            failing = now - reflector.failing_since
            return f"{self.name}: list/watch failing for {failing:.0f}s ({reflector.last_error})"
        if reflector.last_activity is not None and now - reflector.last_activity > self.stale_after:
            return f"{self.name}: no event or bookmark for {now - reflector.last_activity:.0f}s"
        return None

    # ------------------------------------------------------------------ sink (called by the reflector)
    def cached(self, key: str) -> Obj | None:
        return self.indexer.get_by_key(key)

    def add_history_listener(self, listener: Callable[[], None]) -> None:
        """Call `listener` after a relist that replaced the cache with a new history of the server (its
        resourceVersions went backwards: see history.py)."""
        self._history_listeners.append(listener)

    def history_restarted(self) -> None:
        for listener in list(self._history_listeners):
            try:
                listener()
            except Exception:
                log.exception("history listener failed", resource=self.name)

    def record_bad_object(self, obj: object, error: Exception) -> None:
        self.decode_errors += 1
        metrics.DECODE_ERRORS.labels(self.name).inc()
        if self.decode_errors <= 10 or self.decode_errors % 1000 == 0:
            log.warning(
                "unreadable object skipped", resource=self.name, error=str(error), count=self.decode_errors
            )

    def apply(self, event_type: str, obj: Obj) -> None:
        """One watch event (ADDED / MODIFIED / DELETED)."""
        self.apply_events([(event_type, obj)])

    def dispatches_inline(self) -> bool:
        """Every handler is inline and can be called right now: the reflector then applies each event as
        soon as it is decoded, so a replaced object is freed before the next one is decoded."""
        listeners = self._listeners
        if not listeners:
            return False
        for listener in listeners:  # noqa: SIM110 (no generator object per network read)
            if not listener.direct:
                return False
        return True

    def _cache_event(self, event_type: str, obj: Obj, stripped: bool) -> tuple[int, Any, Any] | None:
        """Transform and store one watch event; the notification for it (None for an unreadable object).
        `stripped`: the reflector decoded it without managedFields, so the default transform has nothing
        left to do and is skipped (any other transform runs)."""
        try:
            if not stripped or self._transform is not strip_managed_fields:
                obj = self._transform(obj)
            key = object_key(obj)
        except Exception as exc:
            self.record_bad_object(obj, exc)
            return None
        if event_type == "DELETED":
            self.indexer.delete(key)
            return _DELETE, obj, None
        old = self.indexer.upsert(key, obj)
        return (_ADD, obj, False) if old is None else (_UPDATE, old, obj)

    def apply_one(self, event_type: str, obj: Obj, stripped: bool = False) -> None:
        """One watch event, handlers called at once (what `apply_events` does when `dispatches_inline()`);
        a handler that cannot be called now (it became busy) gets the event through its buffer instead."""
        notification = self._cache_event(event_type, obj, stripped)
        if notification is not None:
            kind, a, b = notification
            notify(self._listeners, kind, a, b)

    def apply_events(self, events: Iterable[tuple[str, Obj]], stripped: bool = False) -> None:
        """Watch events, in order: cache first, then the handlers. Inline handlers that can be called now
        get each event at once; the others get one shared batch at the end (one per network read)."""
        cache_event = self._cache_event
        listeners = self._listeners
        direct = [listener for listener in listeners if listener.direct]
        buffered = [listener for listener in listeners if listener not in direct] if direct else listeners
        batch: list[Any] = []
        extend = batch.extend
        for event_type, obj in events:
            notification = cache_event(event_type, obj, stripped)
            if notification is None:
                continue
            if direct:
                kind, a, b = notification
                notify(direct, kind, a, b)
            if buffered:
                extend(notification)
        if batch:
            for listener in buffered:
                listener.push_batch(batch)

    async def replace(self, items: list[Obj], resource_version: str) -> None:
        """A complete list: upsert everything, tombstone what vanished, then mark the cache synced.

        Works in chunks of `_REPLACE_CHUNK` objects and yields to the loop between them, so a 100k-object
        relist never blocks the loop for long (client-go does this work on its own goroutine; readers may
        see the list half-applied, as there).
        """
        initial = not self._synced
        transform = self._transform
        indexer = self.indexer
        listeners = self._listeners
        seen: set[str] = set()
        self._replacing = True
        try:
            for start in range(0, len(items), _REPLACE_CHUNK):
                batch: list[Any] = []
                with GC_POLICY.paused():
                    for raw in items[start : start + _REPLACE_CHUNK]:
                        try:
                            obj = transform(raw)
                            key = object_key(obj)
                        except Exception as exc:
                            self.record_bad_object(raw, exc)
                            continue
                        seen.add(key)
                        old = indexer.upsert(key, obj)
                        if old is None:
                            batch += (_ADD, obj, initial)
                        else:
                            batch += (_UPDATE, old, obj)
                    if batch:
                        for listener in listeners:
                            listener.push_batch(batch)
                GC_POLICY.ingested(_REPLACE_CHUNK)
                if start + _REPLACE_CHUNK < len(items):
                    await asyncio.sleep(0)
            if len(seen) != len(indexer):
                tombstones: list[Any] = []
                for key in [k for k in indexer.list_keys() if k not in seen]:
                    gone = indexer.delete(key)
                    if gone is not None:
                        tombstones += (_DELETE, DeletedFinalStateUnknown(key, gone), None)
                if tombstones:
                    for listener in listeners:
                        listener.push_batch(tombstones)
        finally:
            self._replacing = False
        if initial:
            self._synced = True
            for listener in listeners:
                listener.push(_SYNCED, None, None)
            self._synced_event.set()
        GC_POLICY.freeze()


def informer_name(
    gvr: GroupVersionResource,
    namespace: str | None,
    label_selector: str | None,
    field_selector: str | None,
    metadata_only: bool,
) -> str:
    """The `resource` label of an informer: the GVR, plus its filters when it has any."""
    extras = [f"ns={namespace}"] if namespace else []
    if label_selector:
        extras.append(f"labels={label_selector}")
    if field_selector:
        extras.append(f"fields={field_selector}")
    if metadata_only:
        extras.append("metadata")
    return f"{gvr}[{','.join(extras)}]" if extras else str(gvr)
