"""Event recorders: what a controller calls to record an Event (`EventRecorder.event()` only builds it and
hands it to the broadcaster), and the log-only recorder of contexts without an event pipeline."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import structlog

from manager.apimachinery.metatime import format_time
from manager.events.correlator import Event

if TYPE_CHECKING:
    from manager.events.broadcaster import EventBroadcaster

log = structlog.get_logger("manager.events")


def object_reference(obj: dict[str, Any]) -> dict[str, str]:
    meta = obj.get("metadata", {})
    ref = {
        "kind": obj.get("kind", ""),
        "namespace": meta.get("namespace", ""),
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
        "apiVersion": obj.get("apiVersion", ""),
        "resourceVersion": meta.get("resourceVersion", ""),
    }
    return {k: v for k, v in ref.items() if v}


class EventRecorder:
    """Records core/v1 Events about objects for one source component; `event()` never blocks or raises."""

    def __init__(self, broadcaster: EventBroadcaster, component: str) -> None:
        self.broadcaster = broadcaster
        self.component = component

    def event(self, obj: dict[str, Any], type: str, reason: str, message: str) -> None:
        """Record an event of `type` ("Normal" or "Warning") about `obj` (a raw object dict)."""
        try:
            self.broadcaster.enqueue(self.make_event(obj, type, reason, message), self.component)
        except Exception:  # an unreadable object must never fail a reconcile
            log.warning("cannot record event", reason=reason, exc_info=True)

    def make_event(self, obj: dict[str, Any], type: str, reason: str, message: str) -> Event:
        now = self.broadcaster.clock()
        timestamp = format_time(now)
        ref = object_reference(obj)
        source = {"component": self.component}
        if self.broadcaster.host:
            source["host"] = self.broadcaster.host
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": f"{ref.get('name', '')}.{self.broadcaster.unique_nanos(now):x}",
                "namespace": ref.get("namespace") or "default",
            },
            "involvedObject": ref,
            "reason": reason,
            "message": message,
            "type": type,
            "count": 1,
            "firstTimestamp": timestamp,
            "lastTimestamp": timestamp,
            "source": source,
            "reportingComponent": self.component,
            "reportingInstance": self.broadcaster.host,  # client-go: source.Host; "" in the real KCM
        }


class LogOnlyEventRecorder(EventRecorder):
    """What a controller gets when its context has no event pipeline (unit tests, tools): events are
    logged, never sent."""

    def __init__(self, component: str) -> None:  # no broadcaster on purpose
        self.component = component

    def event(self, obj: dict[str, Any], type: str, reason: str, message: str) -> None:
        ref = object_reference(obj) if isinstance(obj, dict) else {}
        log.info(
            "event (not sent)",
            component=self.component,
            object=ref.get("name"),
            type=type,
            reason=reason,
            message=message,
        )
