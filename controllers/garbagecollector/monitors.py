"""Monitors: one informer per deletable resource, each feeding the graph builder (upstream:
graph_builder.go `syncMonitors`, `startMonitors`, `IsSynced`, `controllerFor`).

A monitor is the process's own informer of the resource when one exists (the Job controller's pods
informer...), so a resource is watched once per process, or else a metadata-only informer made for the
garbage collector (`InformerFactory.monitor`), which stays out of readiness: a custom resource whose list
fails must not make the manager unready, and must not keep the graph from being built for the others.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import structlog

from controllers.garbagecollector.events import ADD, DELETE, UPDATE, GraphEvent
from manager import (
    DeletedFinalStateUnknown,
    GroupVersionResource,
    HandlerRegistration,
    InformerFactory,
    SharedInformer,
    final_object,
)

log = structlog.get_logger(__name__)


class MonitorHandler:
    """Turns one informer's notifications into graph events carrying the resource's apiVersion and kind.
    Inline: it only builds an event and adds it to a queue."""

    __slots__ = ("api_version", "kind", "push")

    def __init__(self, gvr: GroupVersionResource, push: Callable[[GraphEvent], None]) -> None:
        self.api_version = gvr.api_version
        self.kind = gvr.kind
        self.push = push

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self.push(GraphEvent(ADD, obj, self.api_version, self.kind))

    def on_update(self, old: Any, new: Any) -> None:
        old_uid = (old.get("metadata") or {}).get("uid")
        if old_uid != (new.get("metadata") or {}).get("uid"):
            # Deleted and re-created under the same name while the watch was down: a relist shows it as an
            # update. The old object is gone: say so, or its node would linger in the graph.
            self.push(GraphEvent(DELETE, old, self.api_version, self.kind))
            old = None
        self.push(GraphEvent(UPDATE, new, self.api_version, self.kind, old=old))

    def on_delete(self, obj: dict[str, Any] | DeletedFinalStateUnknown) -> None:
        self.push(GraphEvent(DELETE, final_object(obj), self.api_version, self.kind))


class Monitor:
    __slots__ = ("gvr", "informer", "registration")

    def __init__(
        self, gvr: GroupVersionResource, informer: SharedInformer[Any], registration: HandlerRegistration
    ):
        self.gvr = gvr
        self.informer = informer
        self.registration = registration

    def has_synced(self) -> bool:
        """The informer listed and the handler was handed every object of that list."""
        return self.registration.has_synced()


class Monitors:
    """The current set of monitors, keyed by resource."""

    def __init__(self, factory: InformerFactory | None, push: Callable[[GraphEvent], None]) -> None:
        self.factory = factory
        self.push = push
        self.monitors: dict[GroupVersionResource, Monitor] = {}

    async def sync(self, resources: Iterable[GroupVersionResource]) -> list[str]:
        """Monitor exactly `resources` (new informers start at once: the factory runs) and stop the others;
        returns the errors of resources that could not be monitored (each is tried, whatever the others
        do)."""
        if self.factory is None:
            raise RuntimeError("this ControllerContext has no informer factory")
        factory = self.factory
        wanted = set(resources)
        errors: list[str] = []
        added = 0
        for gvr in sorted(wanted - self.monitors.keys(), key=str):
            try:
                informer = factory.monitor(gvr)
                registration = informer.add_event_handler(MonitorHandler(gvr, self.push), inline=True)
            except Exception as exc:  # reported and counted by the caller
                errors.append(f"couldn't start monitor for resource {gvr}: {exc}")
                continue
            self.monitors[gvr] = Monitor(gvr, informer, registration)
            added += 1
        removed = [self.monitors.pop(gvr) for gvr in list(self.monitors) if gvr not in wanted]
        for monitor in removed:
            await self._stop(monitor)
        log.debug("synced monitors", added=added, kept=len(self.monitors) - added, removed=len(removed))
        return errors

    async def stop_all(self) -> None:
        monitors, self.monitors = list(self.monitors.values()), {}
        for monitor in monitors:
            await self._stop(monitor)

    async def _stop(self, monitor: Monitor) -> None:
        """Handler off, and the informer too if the garbage collector made it (one another controller asked
        for keeps running)."""
        await monitor.informer.remove_event_handler(monitor.registration)
        if self.factory is not None:
            await self.factory.discard(monitor.informer)

    def is_synced(self) -> bool:
        """Some monitors exist and every one has synced (upstream `IsSynced`)."""
        return bool(self.monitors) and all(m.has_synced() for m in self.monitors.values())

    def is_resource_synced(self, gvr: GroupVersionResource) -> bool:
        monitor = self.monitors.get(gvr)
        return monitor is not None and monitor.has_synced()

    def unsynced(self) -> list[str]:
        return sorted(str(gvr) for gvr, m in self.monitors.items() if not m.has_synced())

    def cached(self, gvr: GroupVersionResource, key: str) -> Mapping[str, Any] | None:
        """The monitor's cached object `key` ("ns/name" or "name"), None without a monitor or object."""
        monitor = self.monitors.get(gvr)
        if monitor is None:
            return None
        obj: Mapping[str, Any] | None = monitor.informer.indexer.get_by_key(key)
        return obj
