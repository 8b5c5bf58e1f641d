"""The kubesim object store: one global revision counter, per-resource objects, and a bounded event history.

Public Python API (for the HTTP layer and in-process consumers such as the simulated kubelet)::

    store = Store(history_size=10000, clock=time.time)

    store.resource_version -> int                # current global revision (served as a string)
    store.create(resource, obj) -> dict          # AlreadyExists (409) if present; sets uid,
                                                 # creationTimestamp (when missing) and resourceVersion
    store.get(resource, namespace, name) -> dict | None      # a private deep copy: mutate freely
    store.entry(resource, namespace, name) -> Entry | None   # stored Entry(obj, data bytes, rv), READ-ONLY
    store.entries(resource, namespace=None) -> list[Entry]   # sorted by namespace then name
    store.list(resource, namespace=None) -> (list[dict], rv)  # stored objects, READ-ONLY, sorted by ns/name
    store.update(resource, obj, check_resource_version=True) -> dict
        # replaces the object named by obj.metadata; 404 if absent; 409 Conflict when
        # obj.metadata.resourceVersion is set and stale; a byte-identical write is a no-op (same
        # resourceVersion, no event); an object with deletionTimestamp, no finalizers and
        # deletionGracePeriodSeconds == 0 is removed (DELETED), as the apiserver does on update.
    store.delete(resource, namespace, name, uid=None, resource_version=None) -> dict
        # "delete now" (grace 0): removed with a DELETED event, unless it has finalizers, in which case
        # deletionTimestamp (if unset) and deletionGracePeriodSeconds=0 are set (MODIFIED) and it stays.
        # uid / resource_version are preconditions (409 Conflict on mismatch). Returns the last state.
        # honour_finalizers=False removes it as stored even so: the registry's DELETE when the request
        # itself took the last (garbage-collector) finalizers off, as upstream's "delete now" does.
    store.subscribe(resource | None, callback) -> Subscription   # callback(WatchEvent), synchronous, must
                                                 # not block or raise; resource None = every resource;
                                                 # Subscription.close() stops it. Writes made inside a
                                                 # callback are delivered after the current event.
    store.watch(resource | None) -> StoreWatch    # async iterator of WatchEvent (queue based); .close()
    store.events_since(resource, rv) -> list[WatchEvent]   # 410 Expired (ApiError) if rv was compacted
    store.list_at(resource, rv, namespace=None) -> list[Entry]  # MVCC snapshot at rv (410 if compacted)
    store.compact()                              # drop all history: resuming at an older rv gets 410
    store.floor(resource) -> int                 # events after this revision are still in history
    store.now() -> float; format_time(t) / format_micro_time(t) -> RFC 3339 strings

Resource keys are plural resource names qualified by group: "pods", "nodes", "events", "jobs.batch",
"leases.coordination.k8s.io", "widgets.example.com" (both event APIs share "events").
Objects handed to `create`/`update` become the store's: do not mutate them afterwards. Objects in events and
in `list()` results are shared and read-only; `get()` returns a copy.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import logging
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol

import orjson

from kubesim.status import errors
from kubesim.storage.history import History
from kubesim.storage.records import (
    Entry,
    StoreWatch,
    Subscription,
    WatchEvent,
    format_micro_time,
    format_time,
    split_resource,
)

__all__ = [
    "Entry",
    "Store",
    "StoreWatch",
    "Subscription",
    "WatchEvent",
    "format_micro_time",
    "format_time",
    "split_resource",
]

JSON = dict[str, Any]
log = logging.getLogger(__name__)


def _dumps(obj: JSON) -> bytes:
    # orjson leaves its output in a buffer grown by doubling (an 8 KB allocation for a 3 KB pod); these bytes
    # are kept (current object, watch history), so keep an exact-size copy: it costs a memcpy.
    return bytes(memoryview(orjson.dumps(obj)))


def _loads(data: bytes) -> JSON:
    obj: JSON = orjson.loads(data)
    return obj


Entries = list[Entry]
Events = list[WatchEvent]


class Journal(Protocol):
    """What a durable store is told beyond the change events it subscribes to (kubesim.storage.durable)."""

    def dropped(self, resource: str) -> None: ...

    def compacted(self, rv: int) -> None: ...


class Store:
    def __init__(self, history_size: int = 10000, clock: Callable[[], float] = time.time) -> None:
        self.history_size = max(1, history_size)
        self.clock = clock
        self._rv = 0
        self._objects: dict[str, dict[str, dict[str, Entry]]] = {}
        # Sorted (namespace, name) keys per resource, rebuilt lazily after a create or delete: a paged list
        # of N objects then costs O(page) per page instead of re-sorting all N for every page.
        self._order: dict[str, list[tuple[str, str]]] = {}
        self._history = History(self.history_size)
        self._subs: dict[str | None, list[Subscription]] = {}
        self._pending: deque[WatchEvent] = deque()
        self._delivering = False
        self.revision_waiters = 0  # requests waiting for a revision not reached yet (wait_for_revision)
        self.journal: Journal | None = None

    # ---- reads -------------------------------------------------------------------------------------------
    @property
    def resource_version(self) -> int:
        return self._rv

    def now(self) -> float:
        return self.clock()

    def entry(self, resource: str, namespace: str, name: str) -> Entry | None:
        return self._objects.get(resource, {}).get(namespace or "", {}).get(name)

    def get(self, resource: str, namespace: str, name: str) -> JSON | None:
        entry = self.entry(resource, namespace, name)
        return None if entry is None else _loads(entry.data)

    def entries(self, resource: str, namespace: str | None = None) -> Entries:
        """Current entries sorted by namespace then name (the order lists and continue tokens use)."""
        return list(self.iter_entries(resource, namespace))

    def iter_entries(
        self, resource: str, namespace: str | None = None, after: tuple[str, str] | None = None
    ) -> Iterator[Entry]:
        """Current entries in (namespace, name) order, optionally only those after a continue key.

        Consume it before the next write: the order is shared with later calls."""
        keys = self._sorted_keys(resource)
        start = 0 if namespace is None else bisect.bisect_left(keys, (namespace, ""))
        if after is not None:
            start = max(start, bisect.bisect_right(keys, after))
        spaces = self._objects.get(resource, {})
        for ns, name in keys[start:] if start else keys:
            if namespace is not None and ns != namespace:
                return
            yield spaces[ns][name]

    def count_after(self, resource: str, namespace: str | None, after: tuple[str, str]) -> int:
        """How many current entries sort after `after` (within `namespace` when given)."""
        keys = self._sorted_keys(resource)
        end = len(keys) if namespace is None else bisect.bisect_left(keys, (namespace + "\x00", ""))
        return max(0, end - bisect.bisect_right(keys, after))

    def _sorted_keys(self, resource: str) -> list[tuple[str, str]]:
        keys = self._order.get(resource)
        if keys is None:
            keys = sorted((ns, n) for ns, by_name in self._objects.get(resource, {}).items() for n in by_name)
            self._order[resource] = keys
        return keys

    def list(self, resource: str, namespace: str | None = None) -> tuple[list[JSON], int]:
        return [e.obj for e in self.entries(resource, namespace)], self._rv

    def count(self, resource: str, namespace: str | None = None) -> int:
        spaces = self._objects.get(resource, {})
        if namespace is not None:
            return len(spaces.get(namespace, {}))
        return sum(len(v) for v in spaces.values())

    def floor(self, resource: str) -> int:
        """Events with a revision greater than this are still in history."""
        return self._history.floor(resource)

    def events_since(self, resource: str, rv: int) -> Events:
        return self._history.since(resource, rv)

    def list_at(self, resource: str, rv: int, namespace: str | None = None) -> Entries:
        """The objects as they were at revision `rv` (MVCC read from the event history)."""
        if rv >= self._rv:
            return self.entries(resource, namespace)
        later = self.events_since(resource, rv)
        if not later:
            return self.entries(resource, namespace)
        state = {(e.namespace, e.name): e for e in self.entries(resource, namespace)}
        for event in reversed(later):
            key = (event.entry.namespace, event.entry.name)
            if namespace is not None and key[0] != namespace:
                continue
            if event.old is None:
                state.pop(key, None)
            else:
                state[key] = event.old
        return [state[k] for k in sorted(state)]

    # ---- writes ------------------------------------------------------------------------------------------
    def _next_rv(self) -> int:
        self._rv += 1
        return self._rv

    def create(self, resource: str, obj: JSON) -> JSON:
        meta = obj.setdefault("metadata", {})
        namespace = meta.get("namespace") or ""
        name = meta["name"]
        spaces = self._objects.setdefault(resource, {})
        if name in spaces.get(namespace, {}):
            plural, group = split_resource(resource)
            raise errors.already_exists(plural, group, name)
        if "uid" not in meta:
            meta["uid"] = str(uuid.uuid4())
        if "creationTimestamp" not in meta:
            meta["creationTimestamp"] = format_time(self.clock())
        rv = self._next_rv()
        meta["resourceVersion"] = str(rv)
        entry = Entry(obj, _dumps(obj), rv)
        spaces.setdefault(namespace, {})[name] = entry
        self._order.pop(resource, None)
        self._emit(WatchEvent("ADDED", resource, entry, None))
        return obj

    def _require(self, resource: str, namespace: str, name: str) -> Entry:
        entry = self.entry(resource, namespace, name)
        if entry is None:
            plural, group = split_resource(resource)
            raise errors.not_found(plural, group, name)
        return entry

    def update(self, resource: str, obj: JSON, check_resource_version: bool = True) -> JSON:
        meta = obj["metadata"]
        namespace, name = meta.get("namespace") or "", meta["name"]
        old = self._require(resource, namespace, name)
        sent_rv = meta.get("resourceVersion")
        if check_resource_version and sent_rv and sent_rv != str(old.rv):
            plural, group = split_resource(resource)
            raise errors.optimistic_lock(plural, group, name)
        if obj is old.obj:
            raise ValueError("update() got the stored object itself: modify a copy from get()")
        meta["resourceVersion"] = str(old.rv)
        if obj == old.obj:
            return old.obj
        if self._finished(resource, obj):
            return self._remove(resource, old, obj)
        rv = self._next_rv()
        meta["resourceVersion"] = str(rv)
        entry = Entry(obj, _dumps(obj), rv)
        self._objects[resource][namespace][name] = entry
        self._emit(WatchEvent("MODIFIED", resource, entry, old))
        return obj

    @staticmethod
    def _finished(resource: str, obj: JSON) -> bool:
        """Being deleted with nothing left to wait for: no finalizers and no grace period running (a
        namespace also waits for its spec.finalizers)."""
        meta = obj["metadata"]
        if (
            not meta.get("deletionTimestamp")
            or meta.get("finalizers")
            or meta.get("deletionGracePeriodSeconds", 0)
        ):
            return False
        return not (resource == "namespaces" and (obj.get("spec") or {}).get("finalizers"))

    def delete(
        self,
        resource: str,
        namespace: str,
        name: str,
        uid: str | None = None,
        resource_version: str | None = None,
        honour_finalizers: bool = True,
    ) -> JSON:
        old = self._require(resource, namespace, name)
        meta = old.obj["metadata"]
        plural, group = split_resource(resource)
        if uid is not None and uid != meta.get("uid"):
            raise errors.conflict(
                plural,
                group,
                name,
                f"Precondition failed: UID in precondition: {uid}, UID in object meta: {meta.get('uid')}",
            )
        if resource_version is not None and resource_version != meta.get("resourceVersion"):
            why = (
                f"Precondition failed: ResourceVersion in precondition: {resource_version}, "
                f"ResourceVersion in object meta: {meta.get('resourceVersion')}"
            )
            raise errors.conflict(plural, group, name, why)
        obj: JSON = orjson.loads(old.data)
        if meta.get("finalizers") and honour_finalizers:
            new_meta = obj["metadata"]
            if not new_meta.get("deletionTimestamp"):
                new_meta["deletionTimestamp"] = format_time(self.clock())
                if new_meta.get("generation", 0) > 0:
                    new_meta["generation"] += 1
            new_meta["deletionGracePeriodSeconds"] = 0
            return self.update(resource, obj, check_resource_version=False)
        return self._remove(resource, old, obj)

    def _remove(self, resource: str, old: Entry, obj: JSON) -> JSON:
        rv = self._next_rv()
        obj["metadata"]["resourceVersion"] = str(rv)
        entry = Entry(obj, _dumps(obj), rv)
        by_name = self._objects[resource][old.namespace]
        del by_name[old.name]
        if not by_name:
            del self._objects[resource][old.namespace]
        self._order.pop(resource, None)
        self._emit(WatchEvent("DELETED", resource, entry, old))
        return obj

    def compact(self) -> int:
        """Forget all history: watches or lists asking for an older revision now get 410 Expired."""
        self._history.compact(self._rv)
        if self.journal is not None:
            self.journal.compacted(self._rv)
        return self._rv

    # ---- events ------------------------------------------------------------------------------------------
    def _emit(self, event: WatchEvent) -> None:
        self._history.record(event)
        self._pending.append(event)
        if self._delivering:
            return  # a subscriber wrote from its callback: deliver after this event, in revision order
        self._delivering = True
        try:
            while self._pending:
                current = self._pending.popleft()
                for key in (current.resource, None):
                    for sub in list(self._subs.get(key, ())):
                        try:
                            sub.callback(current)
                        except Exception:  # a consumer's bug must never break a write
                            log.exception("store subscriber failed")
        finally:
            self._delivering = False

    def subscribe(self, resource: str | None, callback: Callable[[WatchEvent], None]) -> Subscription:
        sub = Subscription(self._unsubscribe, resource, callback)
        self._subs.setdefault(resource, []).append(sub)
        return sub

    def _unsubscribe(self, sub: Subscription) -> None:
        subs = self._subs.get(sub.resource, [])
        with contextlib.suppress(ValueError):
            subs.remove(sub)

    async def wait_for_revision(self, rv: int, timeout: float) -> bool:
        """Wait (at most `timeout` seconds) until the store's revision reaches `rv`; True if it did."""
        if self._rv >= rv:
            return True
        reached = asyncio.Event()

        def check(event: WatchEvent) -> None:
            if event.rv >= rv:
                reached.set()

        subscription = self.subscribe(None, check)
        self.revision_waiters += 1
        try:
            async with asyncio.timeout(timeout):
                await reached.wait()
        except TimeoutError:
            pass
        finally:
            self.revision_waiters -= 1
            subscription.close()
        return self._rv >= rv

    def watch(self, resource: str | None) -> StoreWatch:
        return StoreWatch(self.subscribe, resource)

    def resources(self) -> Iterable[str]:
        return list(self._objects)

    def drop_resource(self, resource: str) -> None:
        """Forget a resource entirely (a deleted CRD's storage)."""
        self._objects.pop(resource, None)
        self._order.pop(resource, None)
        if self.journal is not None:
            self.journal.dropped(resource)

    # ---- restoring a saved state (kubesim.storage.durable) -----------------------------------------------
    @property
    def history(self) -> History:
        return self._history

    def restore_entry(self, resource: str, namespace: str, name: str, entry: Entry) -> None:
        """Put back one saved object as it was: no new revision, no event."""
        self._objects.setdefault(resource, {}).setdefault(namespace, {})[name] = entry
        self._order.pop(resource, None)

    def restore_revision(self, rv: int) -> None:
        self._rv = max(self._rv, rv)
