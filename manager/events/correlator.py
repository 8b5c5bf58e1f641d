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

import orjson
import structlog

from manager.apimachinery.metatime import format_time

MAX_LRU_ENTRIES = 4096
SPAM_BURST = 25
SPAM_QPS = 1.0 / 300.0
AGGREGATE_MAX_EVENTS = 10
AGGREGATE_INTERVAL = 600.0
COMBINED_PREFIX = "(combined from similar events): "

Event = dict[str, Any]
log = structlog.get_logger("manager.events")
_NONE: dict[str, str] = {}  # the default of a missing section (never written)


def aggregate_key(event: Event) -> tuple[str, ...]:
    """Everything but the message (client-go EventAggregatorByReasonFunc)."""
    # One flat tuple built in place: it is computed for every event sent and every answer stored.
    source = event.get("source", _NONE)
    ref = event.get("involvedObject", _NONE)
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


def event_key(event: Event) -> tuple[Any, ...]:
    """Identical events share this key (client-go getEventKey)."""
    # (aggregate key, message): a pair is cheaper to build than a flat copy with the message appended
    return (aggregate_key(event), event.get("message", ""))


def spam_key(event: Event) -> tuple[str, ...]:
    return aggregate_key(event)[:_SPAM_KEY_LENGTH]


class _LRU(OrderedDict[tuple[Any, ...], Any]):
    """golang-lru's Cache as client-go uses it: a hit (`get` + `move_to_end`) and an add make the entry the
    most recently used; `insert()` adds a new entry and drops the least recently used beyond `size`. The
    records are mutable, so a hit updates one in place rather than storing a new one."""

    def __init__(self, size: int = MAX_LRU_ENTRIES) -> None:
        super().__init__()
        self.size = size

    def insert(self, key: tuple[Any, ...], value: Any) -> Any:
        """Add a new entry (most recently used); returns `value`."""
        self[key] = value
        while len(self) > self.size:
            self.popitem(last=False)
        return value


class _Observed:
    """client-go's eventLog: what was last sent (or answered) for one event key. `answer`: the server's
    answer not decoded yet (`update_state_raw`); its fields replace the others when the key is next read."""

    __slots__ = ("answer", "count", "first_timestamp", "name", "resource_version")

    def __init__(self, count: int, first_timestamp: str, name: str, resource_version: str) -> None:
        self.count = count
        self.first_timestamp = first_timestamp
        self.name = name
        self.resource_version = resource_version
        self.answer: bytes | None = None

    def update(self, event: Event) -> None:
        """Take the fields of a server's answer (raises, changing nothing, when it is not an Event)."""
        meta = event["metadata"]
        count = int(event.get("count") or 1)
        first = event.get("firstTimestamp", "")
        name = meta["name"]
        rv = meta.get("resourceVersion", "")
        self.count, self.first_timestamp, self.name, self.resource_version = count, first, name, rv
        self.answer = None


@dataclass(slots=True)
class Correlation:
    """What to do with one event: `skip` it, or send `event` (as a PATCH with `patch` when not None).
    `key`: the observation key it was correlated under, for `update_state` once it is written."""

    event: Event
    patch: dict[str, Any] | None = None
    skip: bool = False
    key: tuple[Any, ...] | None = None


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

    def correlate(self, event: Event, agg_key: tuple[str, ...] | None = None) -> Correlation:
        """What to do with `event`; `agg_key`: its `aggregate_key` when the caller has it (the recorder builds
        it with the event)."""
        # Aggregation, observation and the spam filter inline (three method calls fewer per event). Their
        # keys share their fields: the aggregate key is built once and the others derived from it
        # (aggregation and observation keep the source, involved object and type of `event`). One clock read
        # serves the aggregation and the spam bucket (client-go reads its clock in each, microseconds apart).
        if agg_key is None:
            agg_key = aggregate_key(event)
        now = self.clock()
        message = event.get("message", "")
        # 1. aggregation; `_LRU.insert` inline here and below (a method call less per new key).
        aggregates = self._aggregates
        record: list[Any] | None = aggregates.get(agg_key)  # [messages, last seen]
        if record is None:
            messages = {message}
            aggregates[agg_key] = [messages, now]
            if len(aggregates) > aggregates.size:
                aggregates.popitem(last=False)
        else:
            aggregates.move_to_end(agg_key)
            if now - record[1] > self.max_interval:
                messages = record[0] = {message}
            else:
                messages = record[0]
                messages.add(message)
            record[1] = now
        key: tuple[Any, ...]
        if len(messages) < self.max_events:
            key = (agg_key, message)  # event_key(event)
        else:
            messages.pop()  # keep the set bounded, as client-go does
            event, key = _combined(event, message, now), agg_key
        # 2. observation
        observed = self._observed
        last: _Observed | None = observed.get(key)
        patch: dict[str, Any] | None = None
        if last is None:
            observed[key] = _Observed(1, event.get("firstTimestamp", ""), event["metadata"]["name"], "")
            if len(observed) > observed.size:
                observed.popitem(last=False)
        else:
            observed.move_to_end(key)
            event, patch = _repeated(event, last)
        # 3. the spam filter: a token bucket per spam key, the aggregate key's prefix
        spam_key = agg_key[:_SPAM_KEY_LENGTH]
        spam = self._spam
        bucket: list[float] | None = spam.get(spam_key)  # [tokens, last refill]
        burst = float(self.spam_burst)
        if bucket is None:
            bucket = spam[spam_key] = [burst, now]
            if len(spam) > spam.size:
                spam.popitem(last=False)
        else:
            spam.move_to_end(spam_key)
        tokens = bucket[0] + (now - bucket[1]) * self.spam_qps
        if tokens > burst:  # min() inline
            tokens = burst
        bucket[1] = now
        # Positional: a keyword call costs more (one per event).
        if tokens >= 1.0:
            bucket[0] = tokens - 1.0
            return Correlation(event, patch, False, key)
        bucket[0] = tokens
        return Correlation(event, None, True, key)

    def update_state(self, event: Event, key: tuple[Any, ...] | None = None) -> None:
        """Remember what the server answered, so the next duplicate patches the right object. `key`: the
        `Correlation.key` of the event written (the server echoes every field of it), else computed from
        `event` as client-go does."""
        if key is None:
            # Combined events are observed under their aggregate key (their message changes every time).
            message = event.get("message", "")
            agg_key = aggregate_key(event)
            key = agg_key if message.startswith(COMBINED_PREFIX) else (agg_key, message)
        observed = self._observed
        last: _Observed | None = observed.get(key)
        if last is None:
            record = _Observed(0, "", "", "")
            record.update(event)
            observed.insert(key, record)
            return
        last.update(event)
        observed.move_to_end(key)

    def update_state_raw(self, answer: bytes, key: tuple[Any, ...]) -> None:
        """`update_state(orjson.loads(answer), key)`, the answer decoded only when `key` is next read: most
        events are never repeated, and their answers' decoding was a tenth of an event's cost. An answer
        that turns out not to be an Event then leaves the record as it was, as `update_state` does (logged
        then, not now)."""
        last: _Observed | None = self._observed.get(key)
        if last is None:  # evicted meanwhile: a new record needs the answer's fields now
            self.update_state(orjson.loads(answer), key)
            return
        last.answer = answer
        self._observed.move_to_end(key)


def _combined(event: Event, message: str, now: float) -> Event:
    """The event that stands for a burst of similar ones: new name and timestamps, count 1, the message
    prefixed (client-go EventAggregate)."""
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
        message=COMBINED_PREFIX + message,
    )
    return combined


def _repeated(event: Event, last: _Observed) -> tuple[Event, dict[str, Any]]:
    """`event` as the next occurrence of the one `last` records (its count, first timestamp, name and
    resourceVersion), and the PATCH that writes it (client-go eventObserve)."""
    if last.answer is not None:
        _take_answer(last)
    last.count += 1
    count = last.count
    updated = dict(event)
    updated["count"] = count
    updated["firstTimestamp"] = last.first_timestamp
    updated["metadata"] = {**event["metadata"], "name": last.name}
    if last.resource_version:
        updated["metadata"]["resourceVersion"] = last.resource_version
    patch = {
        "count": count,
        "lastTimestamp": updated.get("lastTimestamp"),
        "message": updated.get("message", ""),
    }
    return updated, patch


def _take_answer(record: _Observed) -> None:
    """Apply the answer `update_state_raw` left undecoded on `record`."""
    answer, record.answer = record.answer, None
    try:
        event = orjson.loads(answer or b"")
        if not isinstance(event, dict):
            raise TypeError("the answer is not a JSON object")
        record.update(event)
    except Exception:  # as update_state would have raised when it was written: the record stays as it was
        log.exception("event sender failed on one event's answer")
