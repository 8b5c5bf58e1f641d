"""client-go's event correlation (`events_cache.go`) on plain Event dicts: pure logic, injectable clock.

In this order, for each event about to be written:
1. aggregation: events that differ only in their message, more than 9 distinct messages within 600 s,
   collapse into one event whose message starts with "(combined from similar events): ";
2. observation: an event identical to one already sent becomes a PATCH of that event's count,
   lastTimestamp and message instead of a new object;
3. spam filter: a token bucket per (source, involved object, type), burst 25, refilled 1 per 300 s;
   events beyond it are skipped.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from manager.apimachinery.metatime import format_time

MAX_LRU_ENTRIES = 4096
SPAM_BURST = 25
SPAM_QPS = 1.0 / 300.0
AGGREGATE_MAX_EVENTS = 10
AGGREGATE_INTERVAL = 600.0
COMBINED_PREFIX = "(combined from similar events): "

Event = dict[str, Any]


def aggregate_key(event: Event) -> tuple[str, ...]:
    """Everything but the message (client-go EventAggregatorByReasonFunc)."""
    # One flat tuple built in place: it is computed for every event sent and every answer stored.
    source = event.get("source", {})
    ref = event.get("involvedObject", {})
    return (
        source.get("component", ""),
        source.get("host", ""),
        ref.get("kind", ""),
        ref.get("namespace", ""),
        ref.get("name", ""),
        ref.get("uid", ""),
        ref.get("apiVersion", ""),
        event.get("type", ""),
        event.get("reason", ""),
        event.get("reportingComponent", ""),
        event.get("reportingInstance", ""),
    )


# The spam key is the aggregate key's prefix: source (2), involved object (5), type (1).
_SPAM_KEY_LENGTH = 8


def event_key(event: Event) -> tuple[str, ...]:
    """Identical events share this key (client-go getEventKey)."""
    return (*aggregate_key(event), event.get("message", ""))


def spam_key(event: Event) -> tuple[str, ...]:
    return aggregate_key(event)[:_SPAM_KEY_LENGTH]


class _LRU(OrderedDict[tuple[str, ...], Any]):
    def __init__(self, size: int = MAX_LRU_ENTRIES) -> None:
        super().__init__()
        self.size = size

    def lookup(self, key: tuple[str, ...]) -> Any:
        value = self.get(key)
        if value is not None:
            self.move_to_end(key)
        return value

    def store(self, key: tuple[str, ...], value: Any) -> None:
        self[key] = value
        self.move_to_end(key)
        while len(self) > self.size:
            self.popitem(last=False)


@dataclass
class _Observed:
    count: int
    first_timestamp: str
    name: str
    resource_version: str


@dataclass
class Correlation:
    """What to do with one event: `skip` it, or send `event` (as a PATCH with `patch` when not None)."""

    event: Event
    patch: dict[str, Any] | None = None
    skip: bool = False


@dataclass(kw_only=True, eq=False)
class EventCorrelator:
    """client-go's EventCorrelator on plain dicts; pure logic with an injectable wall clock."""

    clock: Callable[[], float]
    spam_burst: int = SPAM_BURST
    spam_qps: float = SPAM_QPS
    max_events: int = AGGREGATE_MAX_EVENTS
    max_interval: float = AGGREGATE_INTERVAL
    _aggregates: _LRU = field(init=False, repr=False, default_factory=_LRU)  # key -> (messages, last seen)
    _observed: _LRU = field(init=False, repr=False, default_factory=_LRU)  # event key -> _Observed
    _spam: _LRU = field(init=False, repr=False, default_factory=_LRU)  # spam key -> [tokens, last refill]

    def correlate(self, event: Event) -> Correlation:
        # The three keys share their fields: the aggregate key is built once and the others derived from
        # it (aggregation and observation keep the source, involved object and type of `event`).
        agg_key = aggregate_key(event)
        aggregated, key = self._aggregate(event, agg_key)
        observed, patch = self._observe(aggregated, key)
        if self._is_spam(agg_key[:_SPAM_KEY_LENGTH]):
            return Correlation(observed, skip=True)
        return Correlation(observed, patch)

    def update_state(self, event: Event) -> None:
        """Remember what the server answered, so the next duplicate patches the right object."""
        # Combined events are observed under their aggregate key (their message changes every time).
        key = event_key(event)
        if event.get("message", "").startswith(COMBINED_PREFIX):
            key = aggregate_key(event)
        self._observed.store(
            key,
            _Observed(
                int(event.get("count") or 1),
                event.get("firstTimestamp", ""),
                event["metadata"]["name"],
                event["metadata"].get("resourceVersion", ""),
            ),
        )

    def _aggregate(self, event: Event, agg_key: tuple[str, ...]) -> tuple[Event, tuple[str, ...]]:
        now = self.clock()
        record = self._aggregates.lookup(agg_key)
        if record is None or now - record[1] > self.max_interval:
            record = (set(), now)
        messages: set[str] = record[0]
        messages.add(event.get("message", ""))
        self._aggregates.store(agg_key, (messages, now))
        if len(messages) < self.max_events:
            return event, (*agg_key, event.get("message", ""))
        messages.pop()  # keep the set bounded, as client-go does
        timestamp = format_time(now)
        combined = dict(event)
        combined["metadata"] = {
            **event["metadata"],
            "name": f"{event['involvedObject'].get('name', '')}.{int(now * 1e9):x}",
        }
        combined.update(
            count=1,
            firstTimestamp=timestamp,
            lastTimestamp=timestamp,
            message=COMBINED_PREFIX + event.get("message", ""),
        )
        return combined, agg_key

    def _observe(self, event: Event, key: tuple[str, ...]) -> tuple[Event, dict[str, Any] | None]:
        last: _Observed | None = self._observed.lookup(key)
        if last is None:
            first = event.get("firstTimestamp", "")
            self._observed.store(key, _Observed(1, first, event["metadata"]["name"], ""))
            return event, None
        updated = dict(event)
        updated["count"] = last.count + 1
        updated["firstTimestamp"] = last.first_timestamp
        updated["metadata"] = {**event["metadata"], "name": last.name}
        if last.resource_version:
            updated["metadata"]["resourceVersion"] = last.resource_version
        self._observed.store(
            key, _Observed(updated["count"], last.first_timestamp, last.name, last.resource_version)
        )
        patch = {
            "count": updated["count"],
            "lastTimestamp": updated.get("lastTimestamp"),
            "message": updated.get("message", ""),
        }
        return updated, patch

    def _is_spam(self, key: tuple[str, ...]) -> bool:
        now = self.clock()
        bucket = self._spam.lookup(key)
        if bucket is None:
            bucket = [float(self.spam_burst), now]
        tokens = min(float(self.spam_burst), bucket[0] + (now - bucket[1]) * self.spam_qps)
        allowed = tokens >= 1.0
        self._spam.store(key, [tokens - 1.0 if allowed else tokens, now])
        return not allowed
