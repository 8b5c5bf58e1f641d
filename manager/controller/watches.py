"""What a controller watches: one declaration per informer, and how its events become keys.

Four kinds, as controller-runtime's builder has them: `For` (the primary resource: its own key), `Owns`
(objects it creates: the controller owner's key), `Watches` (any resource: keys from a map function) and
`WatchesWith` (any resource: a full event handler built with the controller). The informer behind a
declaration is shared by every controller declaring the same (resource, namespace, selectors, metadata_only).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from manager.apimachinery.resources import GroupVersionResource
from manager.controller.handlers import Enqueue, EnqueueForObject, EnqueueForOwner, EnqueueMapped, MapFunc
from manager.informers import EventHandler

if TYPE_CHECKING:
    from manager.controller.base import Controller
    from manager.informers import Selectors


@dataclass(frozen=True)
class Watch:
    """The informer part every declaration shares.

    `inline=True` declares the handler cheap and synchronous (it computes keys, updates in-memory state and
    enqueues, with no await and no I/O): the informer then calls it as each event is applied instead of
    through a buffer and a task of its own (manager.informers.listener). A slow inline handler delays the
    informer and every other handler on it.

    `resync_period` > 0 replays the informer's cache to this handler that often (as updates of each object
    to itself, client-go's resync), for controllers that look at every object periodically whatever
    happened (the namespace controller's --namespace-sync-period). It is the handler's: the informer is
    shared all the same."""

    resource: GroupVersionResource
    namespace: str | None = field(default=None, kw_only=True)
    label_selector: str | None = field(default=None, kw_only=True)
    field_selector: str | None = field(default=None, kw_only=True)
    metadata_only: bool = field(default=False, kw_only=True)
    inline: bool = field(default=False, kw_only=True)
    resync_period: float = field(default=0.0, kw_only=True)

    def selectors(self) -> Selectors:
        """The informer this declaration is served by, less its resource."""
        return {
            "namespace": self.namespace,
            "label_selector": self.label_selector,
            "field_selector": self.field_selector,
            "metadata_only": self.metadata_only,
        }

    def event_handler(self, controller: Controller, enqueue: Enqueue) -> EventHandler:
        """The informer handler that feeds `controller`'s queue through `enqueue`."""
        raise NotImplementedError


@dataclass(frozen=True)
class For(Watch):
    """The controller's primary resource: every event enqueues the object's own key."""

    inline: bool = field(default=True, kw_only=True)

    def event_handler(self, controller: Controller, enqueue: Enqueue) -> EventHandler:
        return EnqueueForObject(enqueue)


@dataclass(frozen=True)
class Owns(Watch):
    """Objects the controller creates: events enqueue the controller owner's key when the owner is a `kind` of
    `api_version`'s group (any version). Both default to the controller's `For` resource."""

    kind: str | None = None
    api_version: str | None = None
    inline: bool = field(default=True, kw_only=True)

    def event_handler(self, controller: Controller, enqueue: Enqueue) -> EventHandler:
        primary = next((w for w in controller.declare_watches() if isinstance(w, For)), None)
        kind = self.kind or (primary.resource.kind if primary else None)
        api_version = self.api_version or (primary.resource.api_version if primary else None)
        if kind is None or api_version is None:
            raise ValueError(f"{controller.name}: Owns() needs kind and api_version when there is no For()")
        return EnqueueForOwner(enqueue, kind, api_version.rpartition("/")[0])


@dataclass(frozen=True)
class Watches(Watch):
    """Any other resource: each event enqueues the keys `map_fn(obj)` returns."""

    map_fn: MapFunc

    def event_handler(self, controller: Controller, enqueue: Enqueue) -> EventHandler:
        return EnqueueMapped(enqueue, self.map_fn)


@dataclass(frozen=True)
class WatchesWith(Watch):
    """Any other resource, with a full event handler (on_add/on_update/on_delete) built as
    `handler(controller)`, so it may use the controller's queue and state. `handler` may take the declaring
    controller's own class: it is only ever called with the controller that declares the watch."""

    handler: Callable[[Any], EventHandler]

    def event_handler(self, controller: Controller, enqueue: Enqueue) -> EventHandler:
        return self.handler(controller)
