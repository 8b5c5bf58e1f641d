"""core/v1 Events with client-go's correlation, sent in the background so a reconcile never waits.

`EventBroadcaster` (one per manager) owns a bounded queue (1000 events, like client-go's broadcaster), the
correlator and a sender task; `broadcaster.recorder(component)` hands out `EventRecorder`s whose `event()`
only builds the Event and drops it into the queue (or counts it as dropped when the queue is full).

The correlator (client-go `events_cache.go`) runs in the sender, in this order:
1. aggregation: events that differ only in their message, more than 9 distinct messages within 600 s,
   collapse into one event whose message starts with "(combined from similar events): ";
2. observation: an event identical to one already sent becomes a PATCH of that event's count,
   lastTimestamp and message instead of a new object;
3. spam filter: a token bucket per (source, involved object, type), burst 25, refilled 1 per 300 s;
   events beyond it are skipped.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import socket
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import structlog
from prometheus_client import Counter

from manager.client.errors import AlreadyExists, ApiError, NotFound
from manager.resources import EVENTS

if TYPE_CHECKING:
    from manager.client.rest import ApiClient

log = structlog.get_logger(__name__)

MAX_QUEUED_EVENTS = 1000
MAX_LRU_ENTRIES = 4096
SPAM_BURST = 25
SPAM_QPS = 1.0 / 300.0
AGGREGATE_MAX_EVENTS = 10
AGGREGATE_INTERVAL = 600.0
COMBINED_PREFIX = "(combined from similar events): "
MAX_TRIES_PER_EVENT = 12
RETRY_SLEEP = 10.0

EVENTS_DROPPED = Counter(
    "events_dropped", "Events dropped because the event queue was full", ["component"])
EVENTS_SENT = Counter(
    "events_sent", "Events written to the API server, by action (create, patch, skip, error)", ["action"])

Event = dict[str, Any]


def format_time(seconds: float) -> str:
    """metav1.Time: RFC 3339 with second precision, UTC."""
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


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


def _involved(event: Event) -> tuple[str, ...]:
    ref = event.get("involvedObject", {})
    return tuple(ref.get(f, "") for f in ("kind", "namespace", "name", "uid", "apiVersion"))


def _source(event: Event) -> tuple[str, str]:
    source = event.get("source", {})
    return source.get("component", ""), source.get("host", "")


def aggregate_key(event: Event) -> tuple[str, ...]:
    """Everything but the message (client-go EventAggregatorByReasonFunc)."""
    return (*_source(event), *_involved(event), event.get("type", ""), event.get("reason", ""),
            event.get("reportingComponent", ""), event.get("reportingInstance", ""))


def event_key(event: Event) -> tuple[str, ...]:
    """Identical events share this key (client-go getEventKey)."""
    return (*aggregate_key(event), event.get("message", ""))


def spam_key(event: Event) -> tuple[str, ...]:
    return (*_source(event), *_involved(event), event.get("type", ""))


class _LRU(OrderedDict[tuple[str, ...], Any]):
    def __init__(self, size: int) -> None:
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


class EventCorrelator:
    """client-go's EventCorrelator on plain dicts; pure logic with an injectable wall clock."""

    def __init__(self, *, clock: Callable[[], float], spam_burst: int = SPAM_BURST,
                 spam_qps: float = SPAM_QPS, max_events: int = AGGREGATE_MAX_EVENTS,
                 max_interval: float = AGGREGATE_INTERVAL) -> None:
        self.clock = clock
        self.spam_burst = spam_burst
        self.spam_qps = spam_qps
        self.max_events = max_events
        self.max_interval = max_interval
        self._aggregates = _LRU(MAX_LRU_ENTRIES)  # aggregate key -> (set of messages, last seen)
        self._observed = _LRU(MAX_LRU_ENTRIES)  # event key -> _Observed
        self._spam = _LRU(MAX_LRU_ENTRIES)  # spam key -> [tokens, last refill]

    def correlate(self, event: Event) -> Correlation:
        aggregated, key = self._aggregate(event)
        observed, patch = self._observe(aggregated, key)
        if self._is_spam(observed):
            return Correlation(observed, skip=True)
        return Correlation(observed, patch)

    def update_state(self, event: Event) -> None:
        """Remember what the server answered, so the next duplicate patches the right object."""
        # Combined events are observed under their aggregate key (their message changes every time).
        key = event_key(event)
        if event.get("message", "").startswith(COMBINED_PREFIX):
            key = aggregate_key(event)
        self._observed.store(key, _Observed(
            int(event.get("count") or 1), event.get("firstTimestamp", ""),
            event["metadata"]["name"], event["metadata"].get("resourceVersion", "")))

    def _aggregate(self, event: Event) -> tuple[Event, tuple[str, ...]]:
        now = self.clock()
        agg_key = aggregate_key(event)
        record = self._aggregates.lookup(agg_key)
        if record is None or now - record[1] > self.max_interval:
            record = (set(), now)
        messages: set[str] = record[0]
        messages.add(event.get("message", ""))
        self._aggregates.store(agg_key, (messages, now))
        if len(messages) < self.max_events:
            return event, event_key(event)
        messages.pop()  # keep the set bounded, as client-go does
        timestamp = format_time(now)
        combined = dict(event)
        combined["metadata"] = {
            **event["metadata"],
            "name": f"{event['involvedObject'].get('name', '')}.{int(now * 1e9):x}",
        }
        combined.update(count=1, firstTimestamp=timestamp, lastTimestamp=timestamp,
                        message=COMBINED_PREFIX + event.get("message", ""))
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
        self._observed.store(key, _Observed(updated["count"], last.first_timestamp, last.name,
                                            last.resource_version))
        patch = {"count": updated["count"], "lastTimestamp": updated.get("lastTimestamp"),
                 "message": updated.get("message", "")}
        return updated, patch

    def _is_spam(self, event: Event) -> bool:
        now = self.clock()
        key = spam_key(event)
        bucket = self._spam.lookup(key)
        if bucket is None:
            bucket = [float(self.spam_burst), now]
        tokens = min(float(self.spam_burst), bucket[0] + (now - bucket[1]) * self.spam_qps)
        allowed = tokens >= 1.0
        self._spam.store(key, [tokens - 1.0 if allowed else tokens, now])
        return not allowed


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
            "reportingInstance": self.broadcaster.instance,
        }


class LogOnlyEventRecorder(EventRecorder):
    """What a controller gets when its context has no event pipeline (unit tests, tools): events are
    logged, never sent."""

    def __init__(self, component: str) -> None:  # no broadcaster on purpose
        self.component = component

    def event(self, obj: dict[str, Any], type: str, reason: str, message: str) -> None:
        ref = object_reference(obj) if isinstance(obj, dict) else {}
        log.info("event (not sent)", component=self.component, object=ref.get("name"),
                 type=type, reason=reason, message=message)


class EventBroadcaster:
    """The manager's one event pipeline: a bounded queue, the correlator and a background sender."""

    def __init__(self, client: ApiClient, *, instance: str | None = None, host: str = "",
                 clock: Callable[[], float] | None = None, max_queued: int = MAX_QUEUED_EVENTS,
                 retry_sleep: float = RETRY_SLEEP, correlator: EventCorrelator | None = None) -> None:
        import time

        self.client = client
        self.clock: Callable[[], float] = clock or time.time
        self.instance = instance or socket.gethostname()
        self.host = host
        self.retry_sleep = retry_sleep
        self.correlator = correlator or EventCorrelator(clock=self.clock)
        self._queue: asyncio.Queue[Event] = asyncio.Queue(maxsize=max_queued)
        self._task: asyncio.Task[None] | None = None
        self._recorders: dict[str, EventRecorder] = {}
        self._last_nanos = 0

    def unique_nanos(self, now: float) -> int:
        """Nanoseconds of `now` for an event name, strictly increasing: a float timestamp only resolves
        a few hundred nanoseconds, and two events named alike would make the second one AlreadyExists."""
        nanos = max(int(now * 1e9), self._last_nanos + 1)
        self._last_nanos = nanos
        return nanos

    def recorder(self, component: str) -> EventRecorder:
        if component not in self._recorders:
            self._recorders[component] = EventRecorder(self, component)
        return self._recorders[component]

    def enqueue(self, event: Event, component: str) -> None:
        try:
            self._queue.put_nowait(event)
        except asyncio.QueueFull:
            EVENTS_DROPPED.labels(component).inc()

    @property
    def pending(self) -> int:
        return self._queue.qsize()

    def start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._send_loop(), name="event-broadcaster")

    async def stop(self, timeout: float = 2.0) -> None:
        """Give queued events `timeout` seconds to be sent, then stop the sender."""
        if self._task is None:
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._queue.join()
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._task = None

    async def _send_loop(self) -> None:
        while True:
            event = await self._queue.get()
            try:
                await self._record(event)
            except Exception:
                log.exception("event sender failed on one event")
            finally:
                self._queue.task_done()

    async def _record(self, event: Event) -> None:
        result = self.correlator.correlate(event)
        if result.skip:
            EVENTS_SENT.labels("skip").inc()
            return
        for attempt in range(MAX_TRIES_PER_EVENT):
            if await self._write(result):
                return
            if attempt + 1 < MAX_TRIES_PER_EVENT:
                await asyncio.sleep(self.retry_sleep)
        log.error("dropping event after retries", reason=event.get("reason"))

    async def _write(self, result: Correlation) -> bool:
        """One attempt; True when done (written, or not worth retrying)."""
        event = result.event
        namespace = event["metadata"]["namespace"]
        try:
            if result.patch is not None:
                try:
                    name = event["metadata"]["name"]
                    answer = await self.client.patch(EVENTS, name, result.patch, namespace)
                    EVENTS_SENT.labels("patch").inc()
                except NotFound:  # the event expired meanwhile: create it again
                    fresh = {**event, "metadata": {k: v for k, v in event["metadata"].items()
                                                   if k != "resourceVersion"}}
                    answer = await self.client.create(EVENTS, fresh, namespace)
                    EVENTS_SENT.labels("create").inc()
            else:
                answer = await self.client.create(EVENTS, event, namespace)
                EVENTS_SENT.labels("create").inc()
        except AlreadyExists:
            return True
        except ApiError as exc:
            EVENTS_SENT.labels("error").inc()
            if exc.status in (400, 403, 422):  # the server will never accept it
                log.warning("event rejected", reason=event.get("reason"), error=str(exc))
                return True
            log.warning("cannot write event, will retry", error=str(exc))
            return False
        except (OSError, TimeoutError) as exc:
            EVENTS_SENT.labels("error").inc()
            log.warning("cannot write event, will retry", error=str(exc))
            return False
        self.correlator.update_state(answer)
        return True
