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
        self._host = host = broadcaster.host
        # The same for each of this recorder's events: built once (no field of an Event is ever changed in
        # place: the correlator copies an event it alters).
        self._source = {"component": component, "host": host} if host else {"component": component}
        # The second whose timestamp text is `_stamp`: [start, end) (one chained comparison per event).
        self._second_start, self._second_end, self._stamp = 1.0, 0.0, ""

    def event(self, obj: dict[str, Any], type: str, reason: str, message: str) -> None:
        """Record an event of `type` ("Normal" or "Warning") about `obj` (a raw object dict)."""
        try:
            event, key = self.make_keyed_event(obj, type, reason, message)
            self.broadcaster.enqueue(event, self.component, key)
        except Exception:  # an unreadable object must never fail a reconcile
            log.warning("cannot record event", reason=reason, exc_info=True)

    def make_event(self, obj: dict[str, Any], type: str, reason: str, message: str) -> Event:
        return self.make_keyed_event(obj, type, reason, message)[0]

    def make_keyed_event(
        self, obj: dict[str, Any], type: str, reason: str, message: str
    ) -> tuple[Event, tuple[str, ...]]:
        """The Event and its `aggregate_key`, built from the values at hand (the correlator would read them
        back from the Event's sections)."""
        broadcaster = self.broadcaster
        now = broadcaster.clock()
        if not self._second_start <= now < self._second_end:
            start = now // 1
            self._second_start, self._second_end, self._stamp = start, start + 1.0, format_time(now)
        timestamp = self._stamp
        meta = obj.get("metadata", _NONE)
        kind = obj.get("kind") or ""
        namespace = meta.get("namespace") or ""
        name = meta.get("name") or ""
        uid = meta.get("uid") or ""
        api_version = obj.get("apiVersion") or ""
        rv = meta.get("resourceVersion")
        if kind and namespace and name and uid and api_version and rv:  # the usual case: one dict display
            ref = {
                "kind": kind,
                "namespace": namespace,
                "name": name,
                "uid": uid,
                "apiVersion": api_version,
                "resourceVersion": rv,
            }
        else:
            ref = object_reference(obj)
        nanos = broadcaster.unique_nanos(now)
        component, host = self.component, self._host
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{name}.{nanos:x}", "namespace": namespace or "default"},
            "involvedObject": ref,
            "reason": reason,
            "message": message,
            "type": type,
            "count": 1,
            "firstTimestamp": timestamp,
            "lastTimestamp": timestamp,
            "source": self._source,
            "reportingComponent": component,
            "reportingInstance": host,  # client-go: source.Host; "" in the real KCM
        }
        # aggregate_key(event), field for field.
        key = (component, host, kind, namespace, name, uid, api_version, type, reason, component, host)
        return event, key


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
