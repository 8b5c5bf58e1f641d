"""How informer events become work-queue keys.

A controller declares `Watch`es (`for_`, `owns`, `watches`); each one becomes an informer event handler that
maps an event to `Request`s and adds them to the controller's queue. The handlers only compute keys: the
reconcile reads the current state from the cache, so they never carry an object or an event type along.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeVar

from manager.apimachinery.resources import GroupVersionResource

if TYPE_CHECKING:
    from manager.controller.base import Controller

Obj = dict[str, Any]


class Request(NamedTuple):
    """The key of one object to reconcile: namespace ("" for cluster-scoped) and name, nothing else.

    A named tuple rather than a frozen dataclass: every enqueue looks it up in the work queue's dirty set,
    and a tuple hashes and compares in C (figures: docs/design/performance.md)."""

    namespace: str
    name: str

    @property
    def key(self) -> str:
        """The cache key, `namespace/name` (or `name` when cluster-scoped)."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @classmethod
    def from_key(cls, key: str) -> Request:
        namespace, _, name = key.rpartition("/")
        return cls(namespace, name)

    @classmethod
    def for_object(cls, obj: Obj) -> Request:
        meta = obj["metadata"]
        return cls(meta.get("namespace") or "", meta["name"])

    def __str__(self) -> str:
        return self.key


class EventHandler(Protocol):
    """The informer handler protocol (owned by manager.informers; repeated here for typing)."""

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None: ...

    def on_update(self, old: Any, new: Any) -> None: ...

    def on_delete(self, obj: Any) -> None: ...


def unwrap_tombstone(obj: Any) -> Obj | None:
    """The last known state of a deleted object, also when the informer hands a DeletedFinalStateUnknown."""
    if isinstance(obj, dict):
        return obj
    inner = getattr(obj, "obj", None)
    return inner if isinstance(inner, dict) else None


def controller_owner(obj: Obj) -> dict[str, Any] | None:
    """The ownerReference with `controller: true`, if any."""
    for ref in obj.get("metadata", {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return ref  # type: ignore[no-any-return]
    return None


def _group_of(api_version: str) -> str:
    return api_version.rpartition("/")[0]


Enqueue = Callable[[Request], None]


class EnqueueForObject:
    """Each event enqueues the object's own key (controller-runtime's EnqueueRequestForObject)."""

    def __init__(self, enqueue: Enqueue) -> None:
        self._enqueue = enqueue

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self._enqueue(Request.for_object(obj))

    def on_update(self, old: Any, new: Any) -> None:
        self._enqueue(Request.for_object(new))

    def on_delete(self, obj: Any) -> None:
        if (last := unwrap_tombstone(obj)) is not None:
            self._enqueue(Request.for_object(last))


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
        return Request(obj["metadata"].get("namespace") or "", ref["name"])

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        if (request := self._owner_request(obj)) is not None:
            self._enqueue(request)

    def on_update(self, old: Any, new: Any) -> None:
        old_request = self._owner_request(old)
        new_request = self._owner_request(new)
        if old_request is not None and old_request != new_request:
            self._enqueue(old_request)
        if new_request is not None:
            self._enqueue(new_request)

    def on_delete(self, obj: Any) -> None:
        if (request := self._owner_request(unwrap_tombstone(obj))) is not None:
            self._enqueue(request)


MapFunc = Callable[[Obj], Iterable[Request]]


class EnqueueMapped:
    """Each event enqueues whatever `map_fn(obj)` returns (for updates: of the old and of the new object)."""

    def __init__(self, enqueue: Enqueue, map_fn: MapFunc) -> None:
        self._enqueue = enqueue
        self._map = map_fn

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        for request in self._map(obj):
            self._enqueue(request)

    def on_update(self, old: Any, new: Any) -> None:
        for request in {*self._map(old), *self._map(new)}:
            self._enqueue(request)

    def on_delete(self, obj: Any) -> None:
        if (last := unwrap_tombstone(obj)) is not None:
            for request in self._map(last):
                self._enqueue(request)


ControllerT = TypeVar("ControllerT", bound="Controller")
# Called with the controller that declared the watch; typed per watch by `watches()`, so a subclass's own
# handler class (taking that subclass) fits without a cast.
HandlerFactory = Callable[[Any], EventHandler]


@dataclass(frozen=True)
class Watch:
    """One informer a controller needs and how its events map to keys.

    Build it with `for_`, `owns` or `watches` rather than directly. The informer is shared by every
    controller asking for the same (resource, namespace, selectors, metadata_only).
    """

    resource: GroupVersionResource
    namespace: str | None = None
    label_selector: str | None = None
    field_selector: str | None = None
    metadata_only: bool = False
    mode: str = "self"  # "self" | "owner" | "map" | "handler"
    owner_kind: str | None = None
    owner_api_version: str | None = None
    map_fn: MapFunc | None = None
    handler: HandlerFactory | None = None
    # Called as each event is applied rather than from its own buffered task (manager.informers.listener):
    # for handlers that only compute keys and enqueue them, with no await and no I/O.
    inline: bool = False


def for_(
    resource: GroupVersionResource,
    *,
    namespace: str | None = None,
    label_selector: str | None = None,
    field_selector: str | None = None,
) -> Watch:
    """The controller's primary resource: every event enqueues the object's own key."""
    return Watch(resource, namespace, label_selector, field_selector, mode="self", inline=True)


def owns(
    resource: GroupVersionResource,
    kind: str | None = None,
    api_version: str | None = None,
    *,
    namespace: str | None = None,
    label_selector: str | None = None,
    field_selector: str | None = None,
    metadata_only: bool = False,
) -> Watch:
    """Objects this controller creates: events enqueue the controller owner's key when the owner is a
    `kind` of `api_version`'s group. Both default to the controller's `for_` resource."""
    return Watch(
        resource,
        namespace,
        label_selector,
        field_selector,
        metadata_only,
        mode="owner",
        owner_kind=kind,
        owner_api_version=api_version,
        inline=True,
    )


def watches(
    resource: GroupVersionResource,
    map_fn: MapFunc | None = None,
    *,
    handler: Callable[[ControllerT], EventHandler] | None = None,
    namespace: str | None = None,
    label_selector: str | None = None,
    field_selector: str | None = None,
    metadata_only: bool = False,
    inline: bool = False,
) -> Watch:
    """Any other resource: either `map_fn(obj) -> Iterable[Request]`, or `handler(controller)` returning
    a full event handler (on_add/on_update/on_delete) that may use the controller's queue and state.

    `handler` may take the declaring controller's own class (e.g. a handler class whose `__init__` takes
    `MyController`): it is only ever called with the controller that declares the watch.

    `inline=True` declares the handler cheap and synchronous (it computes keys, updates in-memory state and
    enqueues): the informer then calls it as each event is applied instead of through a buffer and a task of
    its own. That is faster (an informer whose handlers are all inline frees each replaced object before it
    decodes the next), but a slow inline handler delays the informer and every other handler on it."""
    if (map_fn is None) == (handler is None):
        raise ValueError("watches() needs exactly one of map_fn or handler")
    return Watch(
        resource,
        namespace,
        label_selector,
        field_selector,
        metadata_only,
        mode="map" if map_fn is not None else "handler",
        map_fn=map_fn,
        handler=handler,
        inline=inline,
    )
