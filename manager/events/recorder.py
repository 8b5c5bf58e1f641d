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
    """The ObjectReference of `obj`: its kind, namespace, name, uid, apiVersion and resourceVersion, the
    empty ones left out."""
    meta = obj.get("metadata", _NONE)
    ref: dict[str, str] = {}
    # Field by field (no dict of every field filtered afterwards): one per recorded event.
    if value := obj.get("kind"):
        ref["kind"] = value
    if value := meta.get("namespace"):
        ref["namespace"] = value
    if value := meta.get("name"):
        ref["name"] = value
    if value := meta.get("uid"):
        ref["uid"] = value
    if value := obj.get("apiVersion"):
        ref["apiVersion"] = value
    if value := meta.get("resourceVersion"):
        ref["resourceVersion"] = value
    return ref


_NONE: dict[str, Any] = {}  # a missing metadata (never written)


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
        broadcaster = self.broadcaster
        now = broadcaster.clock()
        timestamp = format_time(now)
        ref = object_reference(obj)
        component = self.component
        host = broadcaster.host
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": f"{ref.get('name', '')}.{broadcaster.unique_nanos(now):x}",
                "namespace": ref.get("namespace") or "default",
            },
            "involvedObject": ref,
            "reason": reason,
            "message": message,
            "type": type,
            "count": 1,
            "firstTimestamp": timestamp,
            "lastTimestamp": timestamp,
            "source": {"component": component, "host": host} if host else {"component": component},
            "reportingComponent": component,
            "reportingInstance": host,  # client-go: source.Host; "" in the real KCM
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
