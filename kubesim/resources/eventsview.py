"""core/v1 Event <-> events.k8s.io/v1 Event: two views of one stored object (field names mapped)."""

from __future__ import annotations

from typing import Any

JSON = dict[str, Any]

# (core/v1 field, events.k8s.io/v1 field) for fields that are simply renamed
_RENAMED = (
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("reportingComponent", "reportingController"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
    ("source", "deprecatedSource"),
)
_SAME = ("metadata", "related", "reason", "type", "action", "eventTime", "series", "reportingInstance")


def _event(api_version: str, source: JSON) -> JSON:
    """An Event of `api_version` with the fields both versions name alike copied from `source`."""
    out: JSON = {"kind": "Event", "apiVersion": api_version}
    for name in _SAME:
        if name in source:
            out[name] = source[name]
    return out


def to_events_v1(core: JSON) -> JSON:
    out = _event("events.k8s.io/v1", core)
    for old, new in _RENAMED:
        value = core.get(old)
        if value not in (None, "", 0, {}):
            out[new] = value
    return out


def to_core(event: JSON) -> JSON:
    out = _event("v1", event)
    for old, new in _RENAMED:
        if new in event:
            out[old] = event[new]
    return out
