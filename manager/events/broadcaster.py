"""The manager's event pipeline: pending events bounded, correlated and written concurrently per object
(see the package docstring)."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import structlog
from prometheus_client import Counter

from manager.client.writegate import WriteRefused
from manager.events.correlator import Correlation, Event, EventCorrelator
from manager.events.recorder import EventRecorder
from manager.events.writer import (
    EVENTS_SENT,
    WRITE_ERRORS,
    create_body,
    events_path,
    failed_write_settled,
    sent,
    write_once,
)

if TYPE_CHECKING:
    from manager.client.rest import ApiClient

log = structlog.get_logger("manager.events")

MAX_QUEUED_EVENTS = 1000
MAX_LANES = 16  # objects whose events are written at the same time
MAX_TRIES_PER_EVENT = 12
RETRY_SLEEP = 10.0

EVENTS_DROPPED = Counter("events_dropped", "Events dropped because the event queue was full", ["component"])
__all__ = ["EVENTS_DROPPED", "EVENTS_SENT", "MAX_LANES", "MAX_QUEUED_EVENTS", "EventBroadcaster"]


# An event and its `aggregate_key` when its recorder built it (None: the correlator computes it).
_Item = tuple[Event, tuple[str, ...] | None]


def _lane_key(item: _Item) -> tuple[str, str, str]:
    """The involved object: every correlator key (spam, aggregate, event) includes it, so two events that
    share any correlator state share a lane; cheaper to build than the spam key itself."""
    key = item[1]
    if key is not None:  # the aggregate key's uid, namespace and name
        return (key[5], key[3], key[4])
    ref = item[0].get("involvedObject") or {}
    return (ref.get("uid", ""), ref.get("namespace", ""), ref.get("name", ""))


@functools.cache
def _dropped(component: str) -> Any:
    return EVENTS_DROPPED.labels(component)


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
        max_lanes: int = MAX_LANES,
    ) -> None:
        import time

        self.client = client
        self.clock: Callable[[], float] = clock or time.time
        self.host = host
        self.retry_sleep = retry_sleep
        self.correlator = correlator or EventCorrelator(clock=self.clock)
        self.max_queued = max_queued
        self._queue: asyncio.Queue[_Item] = asyncio.Queue()  # bounded by `_pending`, lanes included
        self._queued = 0  # events in `_queue`: read per event, cheaper than the Queue's empty()
        self._pending = 0  # recorded, not yet written (or given up): queued, in a lane or being written
        # Resolved once nothing is pending; made only while a stop() waits (no Event set and cleared around
        # every event).
        self._idle_waiters: list[asyncio.Future[None]] = []
        self._lanes: dict[tuple[str, str, str], deque[_Item]] = {}
        self._lane_tasks: set[asyncio.Task[None]] = set()
        self._parked: list[asyncio.Future[tuple[str, str, str]]] = []  # lane tasks waiting for an object
        self.max_lanes = max(1, max_lanes)
        self._free_lanes = self.max_lanes
        self._lane_freed = asyncio.Event()
        self._held = False  # the send loop holds an event, waiting for a free lane
        self._context = contextvars.copy_context()
        self._dropped_in_burst = 0
        self._task: asyncio.Task[None] | None = None
        self._recorders: dict[str, EventRecorder] = {}
        self.last_nanos = 0  # of the last event named (unique_nanos)
        self._refused = 0  # events the write gate refused (this replica may no longer lead)

    def unique_nanos(self, now: float) -> int:
        """Nanoseconds of `now` for an event name, strictly increasing: a float timestamp only resolves
        a few hundred nanoseconds, and two events named alike would make the second one AlreadyExists."""
        nanos = int(now * 1e9)
        if nanos <= self.last_nanos:  # a comparison, not max(): this runs once per event
            nanos = self.last_nanos + 1
        self.last_nanos = nanos
        return nanos

    def recorder(self, component: str) -> EventRecorder:
        if component not in self._recorders:
            self._recorders[component] = EventRecorder(self, component)
        return self._recorders[component]

    def enqueue(self, event: Event, component: str, key: tuple[str, ...] | None = None) -> None:
        """Queue `event` for writing; `key`: its `aggregate_key` when the caller built it already."""
        if self._pending >= self.max_queued:
            _dropped(component).inc()
            self._dropped_in_burst += 1
            if self._dropped_in_burst == 1:
                log.warning("event queue full: dropping events until it drains", max_queued=self.max_queued)
            return
        if self._dropped_in_burst:
            log.warning("event queue accepts events again", dropped=self._dropped_in_burst)
            self._dropped_in_burst = 0
        self._pending += 1
        # Straight into its lane when nothing waits before it (the usual case): no hop through the send
        # loop, one wake-up less per event. Otherwise behind the queued ones, so the order holds.
        task, item = self._task, (event, key)
        if self._queued or self._held or task is None or task.done() or not self._dispatch(item):
            self._queued += 1
            self._queue.put_nowait(item)

    @property
    def pending(self) -> int:
        """Events recorded and not written yet (queued or being sent)."""
        return self._pending

    def start(self) -> None:
        if self._task is None or self._task.done():
            # Lanes run in (a copy of) the context of start(), as the sender task does, not in that of
            # whichever reconcile recorded their first event (its log bindings are not theirs).
            self._context = contextvars.copy_context()
            self._task = asyncio.create_task(self._send_loop(), name="event-broadcaster")

    async def stop(self, timeout: float = 2.0) -> None:
        """Give pending events `timeout` seconds to be sent, then stop the sender (events still in a lane
        then are lost; those still queued are sent after a `start()`)."""
        if self._task is None:
            return
        if self._pending > 0:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._idle_waiters.append(waiter)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await waiter
            if waiter in self._idle_waiters:
                self._idle_waiters.remove(waiter)
        tasks = [self._task, *self._lane_tasks]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._task = None
        for lane in self._lanes.values():  # lanes whose task was cancelled before it took them
            self._finished(len(lane))
        self._lanes.clear()
        self._lane_tasks.clear()
        self._parked.clear()
        self._free_lanes = self.max_lanes

    def _dispatch(self, item: _Item) -> bool:
        """Hand `item` (an event and its key) to its object's lane, opening one when a lane is free (on a
        parked lane task, or a new one while fewer than `max_lanes` exist). False when none is free."""
        key = _lane_key(item)
        lane = self._lanes.get(key)
        if lane is not None:  # that object's lane is busy: after the events before it
            lane.append(item)
            return True
        if self._free_lanes <= 0:
            return False
        self._free_lanes -= 1
        self._lanes[key] = deque((item,))
        if self._parked:  # a lane task waiting for its next object: one wake-up, no task made and torn down
            self._parked.pop().set_result(key)
        else:
            task = asyncio.create_task(self._run_lanes(key), context=self._context.copy())
            self._lane_tasks.add(task)
        return True

    async def _send_loop(self) -> None:
        """Dispatches the events queued while every lane was busy (or before start()), in order."""
        while True:
            item = await self._queue.get()
            self._queued -= 1
            self._held = True
            try:
                while not self._dispatch(item):
                    self._lane_freed.clear()
                    await self._lane_freed.wait()
            except asyncio.CancelledError:
                self._finished(1)  # stopped while every lane was busy: this one is given up
                raise
            finally:
                self._held = False

    async def _run_lanes(self, key: tuple[str, str, str]) -> None:
        """Correlate and write a lane's events in order, a failed write retried; then park until `_dispatch`
        hands over the next object's lane. At most `max_lanes` of these run, each lane on one at a time; the
        writes they await wake them up through no other of ours."""
        loop = asyncio.get_running_loop()
        correlator, client = self.correlator, self.client
        lane = self._lanes[key]
        owned = True  # `lane` is this task's (else it is parked)
        try:
            while True:
                while lane:
                    event, agg_key = lane[0]
                    try:
                        result = correlator.correlate(event, agg_key)
                        if result.skip:
                            sent("skip").inc()
                        elif result.patch is None and result.key is not None:
                            # A new event (the usual case): its create inline, no coroutine of its own.
                            # `result.event`, not `event`: a combined event stands for the one recorded.
                            written = result.event
                            namespace = written["metadata"]["namespace"]
                            try:
                                raw = await client.request_raw(
                                    "POST", events_path(namespace), body=create_body(written)
                                )
                            except WRITE_ERRORS as exc:
                                if not failed_write_settled(exc, written):
                                    await self._retry(result, 1)
                            else:
                                sent("create").inc()
                                correlator.update_state_raw(raw, result.key)
                        else:
                            await self._retry(result, 0)
                    except WriteRefused:
                        self._refused += 1  # this replica may no longer lead: drop it, the next leader acts
                        if self._refused == 1:
                            log.info("events dropped: this replica may no longer hold the leader lease")
                    except asyncio.CancelledError:
                        raise
                    except Exception:
                        log.exception("event sender failed on one event")
                    lane.popleft()
                    self._pending -= 1  # `_finished(1)` inline: a call less per event
                    if self._idle_waiters and self._pending <= 0:
                        self._finished(0)
                owned = False
                self._close_lane(key)
                waiter: asyncio.Future[tuple[str, str, str]] = loop.create_future()
                self._parked.append(waiter)
                key = await waiter
                lane = self._lanes[key]
                owned = True
        finally:  # cancelled (stop()): the events left in its lane are given up
            if owned:
                if lane:
                    self._finished(len(lane))
                self._close_lane(key)
            task = asyncio.current_task()
            if task is not None:
                self._lane_tasks.discard(task)

    def _close_lane(self, key: tuple[str, str, str]) -> None:
        del self._lanes[key]
        self._free_lanes += 1
        if self._held:  # the send loop waits for a free lane
            self._lane_freed.set()

    def _finished(self, count: int) -> None:
        self._pending -= count
        if self._pending <= 0 and self._idle_waiters:  # a stop() waits
            for waiter in self._idle_waiters:
                if not waiter.done():
                    waiter.set_result(None)
            self._idle_waiters.clear()

    async def _retry(self, result: Correlation, tried: int) -> None:
        """Write `result` until done, `tried` attempts made already, `retry_sleep` apart."""
        for attempt in range(tried, MAX_TRIES_PER_EVENT):
            if attempt:
                await asyncio.sleep(self.retry_sleep)
            if await write_once(self.client, self.correlator, result):
                return
        log.error("dropping event after retries", reason=result.event.get("reason"))
