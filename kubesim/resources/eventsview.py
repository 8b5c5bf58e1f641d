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


def to_events_v1(core: JSON) -> JSON:
    out: JSON = {"kind": "Event", "apiVersion": "events.k8s.io/v1"}
    for name in _SAME:
        if name in core:
            out[name] = core[name]
    for old, new in _RENAMED:
        value = core.get(old)
        if value not in (None, "", 0, {}):
            out[new] = value
    return out


def to_core(event: JSON) -> JSON:
    out: JSON = {"kind": "Event", "apiVersion": "v1"}
    for name in _SAME:
        if name in event:
            out[name] = event[name]
    for old, new in _RENAMED:
        if new in event:
            out[old] = event[new]
    return out
