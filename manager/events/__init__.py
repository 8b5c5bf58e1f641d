"""core/v1 Events with client-go's correlation, sent in the background so a reconcile never waits.

`EventBroadcaster` (one per manager) owns a bounded queue (1000 events, like client-go's broadcaster), the
correlator and a sender task; `broadcaster.recorder(component)` hands out `EventRecorder`s whose `event()`
only builds the Event and drops it into the queue (or counts it as dropped when the queue is full).

The correlator (`manager.events.correlator`, client-go's `events_cache.go`: aggregation, then
observation as a PATCH of the count, then the spam filter) runs in the sender, never in a reconcile.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import structlog
from prometheus_client import Counter

from manager.apimachinery.metatime import format_time
from manager.apimachinery.resources import EVENTS
from manager.client.errors import AlreadyExists, ApiError, NotFound
from manager.client.writegate import WriteRefused
from manager.events.correlator import (
    AGGREGATE_INTERVAL,
    AGGREGATE_MAX_EVENTS,
    COMBINED_PREFIX,
    SPAM_BURST,
    SPAM_QPS,
    Correlation,
    Event,
    EventCorrelator,
    aggregate_key,
    event_key,
    spam_key,
)

if TYPE_CHECKING:
    from manager.client.rest import ApiClient

log = structlog.get_logger(__name__)

__all__ = [
    "AGGREGATE_INTERVAL",
    "AGGREGATE_MAX_EVENTS",
    "COMBINED_PREFIX",
    "SPAM_BURST",
    "SPAM_QPS",
    "Correlation",
    "Event",
    "EventBroadcaster",
    "EventCorrelator",
    "EventRecorder",
    "LogOnlyEventRecorder",
    "aggregate_key",
    "event_key",
    "format_time",
    "object_reference",
    "spam_key",
]

MAX_QUEUED_EVENTS = 1000
MAX_TRIES_PER_EVENT = 12
RETRY_SLEEP = 10.0

EVENTS_DROPPED = Counter("events_dropped", "Events dropped because the event queue was full", ["component"])
EVENTS_SENT = Counter(
    "events_sent", "Events written to the API server, by action (create, patch, skip, error)", ["action"]
)


@functools.cache
def _sent(action: str) -> Any:
    """EVENTS_SENT's child for `action`, looked up once (labels() takes a lock and builds a tuple on every
    call); created on first use, so a series still appears only once something was counted in it."""
    return EVENTS_SENT.labels(action)


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


class EventBroadcaster:
    """The manager's one event pipeline: a bounded queue, the correlator and a background sender.

    `host` is client-go's EventSource.Host, which is also the events' reportingInstance: the kubelet sets its
    node name, kube-controller-manager leaves it empty (its events read `reportingInstance: ""`)."""

    def __init__(
        self,
        client: ApiClient,
        *,
        host: str = "",
        clock: Callable[[], float] | None = None,
        max_queued: int = MAX_QUEUED_EVENTS,
        retry_sleep: float = RETRY_SLEEP,
        correlator: EventCorrelator | None = None,
    ) -> None:
        import time

        self.client = client
        self.clock: Callable[[], float] = clock or time.time
        self.host = host
        self.retry_sleep = retry_sleep
        self.correlator = correlator or EventCorrelator(clock=self.clock)
        self._queue: asyncio.Queue[Event] = asyncio.Queue(maxsize=max_queued)
        self._task: asyncio.Task[None] | None = None
        self._recorders: dict[str, EventRecorder] = {}
        self._last_nanos = 0
        self._refused = 0  # events the write gate refused (this replica may no longer lead)

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
            except WriteRefused:
                self._refused += 1  # this replica may no longer lead: drop it, the next leader acts again
                if self._refused == 1:
                    log.info("events dropped: this replica may no longer hold the leader lease")
            except Exception:
                log.exception("event sender failed on one event")
            finally:
                self._queue.task_done()

    async def _record(self, event: Event) -> None:
        result = self.correlator.correlate(event)
        if result.skip:
            _sent("skip").inc()
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
                    _sent("patch").inc()
                except NotFound:  # the event expired meanwhile: create it again
                    fresh = {
                        **event,
                        "metadata": {k: v for k, v in event["metadata"].items() if k != "resourceVersion"},
                    }
                    answer = await self.client.create(EVENTS, fresh, namespace)
                    _sent("create").inc()
            else:
                answer = await self.client.create(EVENTS, event, namespace)
                _sent("create").inc()
        except AlreadyExists:
            return True
        except ApiError as exc:
            _sent("error").inc()
            if exc.status in (400, 403, 422):  # the server will never accept it
                log.warning("event rejected", reason=event.get("reason"), error=str(exc))
                return True
            log.warning("cannot write event, will retry", error=str(exc))
            return False
        except (OSError, TimeoutError) as exc:
            _sent("error").inc()
            log.warning("cannot write event, will retry", error=str(exc))
            return False
        self.correlator.update_state(answer)
        return True
