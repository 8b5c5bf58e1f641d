"""How informer events become work-queue keys (controller-runtime's pkg/handler).

Each watch a controller declares (manager.controller.watches) becomes one of these informer event handlers: it
maps an event to `Request`s and adds them to the controller's queue. The handlers only compute keys: the
reconcile reads the current state from the cache, so they never carry an object or an event type along.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from manager.apimachinery.objects import controller_owner
from manager.controller.reconcile import Request
from manager.informers import DeletedFinalStateUnknown, final_object

Obj = dict[str, Any]
_new_tuple = tuple.__new__  # a Request without the named tuple's Python-level __new__ (per watch event)


def _group_of(api_version: str) -> str:
    return api_version.rpartition("/")[0]


Enqueue = Callable[[Request], None]


class EnqueueForObject:
    """Each event enqueues the object's own key (controller-runtime's EnqueueRequestForObject)."""

    def __init__(self, enqueue: Enqueue) -> None:
        self._enqueue = enqueue

    def on_add(self, obj: Obj, is_in_initial_list: bool) -> None:
        self._enqueue(Request.for_object(obj))

    def on_update(self, old: Obj, new: Obj) -> None:
        self._enqueue(Request.for_object(new))

    def on_delete(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        self._enqueue(Request.for_object(final_object(obj)))


class EnqueueForOwner:
    """Each event enqueues the key of the object's controller owner when it has the given kind and group
    (any version, like controller-runtime's EnqueueRequestForOwner with OnlyControllerOwner). An update that
    changes the owner enqueues both the old and the new one."""

    def __init__(self, enqueue: Enqueue, kind: str, group: str) -> None:
        self._enqueue = enqueue
        self.kind = kind
        self.group = group

    def _owner_request(self, obj: Obj | None) -> Request | None:
        if obj is None:
            return None
        ref = controller_owner(obj)
        if ref is None or ref.get("kind") != self.kind or _group_of(ref.get("apiVersion", "")) != self.group:
            return None
        return _new_tuple(Request, (obj["metadata"].get("namespace") or "", ref["name"]))

    def on_add(self, obj: Obj, is_in_initial_list: bool) -> None:
        if (request := self._owner_request(obj)) is not None:
            self._enqueue(request)

    def on_update(self, old: Obj, new: Obj) -> None:
        old_request = self._owner_request(old)
        new_request = self._owner_request(new)
        if old_request is not None and old_request != new_request:
            self._enqueue(old_request)
        if new_request is not None:
            self._enqueue(new_request)

    def on_delete(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        if (request := self._owner_request(final_object(obj))) is not None:
            self._enqueue(request)


MapFunc = Callable[[Obj], Iterable[Request]]


class EnqueueMapped:
    """Each event enqueues whatever `map_fn(obj)` returns (for updates: of the old and of the new object)."""

    def __init__(self, enqueue: Enqueue, map_fn: MapFunc) -> None:
        self._enqueue = enqueue
        self._map = map_fn

    def on_add(self, obj: Obj, is_in_initial_list: bool) -> None:
        for request in self._map(obj):
            self._enqueue(request)

    def on_update(self, old: Obj, new: Obj) -> None:
        for request in {*self._map(old), *self._map(new)}:
            self._enqueue(request)

    def on_delete(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        for request in self._map(final_object(obj)):
            self._enqueue(request)
