"""core/v1 Events with client-go's correlation, sent in the background so a reconcile never waits.

`EventBroadcaster` (one per manager) holds at most 1000 events not yet written (client-go's broadcaster queues
1000 too), the correlator and a sender task; `broadcaster.recorder(component)` hands out `EventRecorder`s
whose `event()` only builds the Event and queues it, or drops it when 1000 are pending: counted in
`events_dropped_total` and logged once per burst of drops (client-go logs every one).

The sender writes events about different objects concurrently (up to `MAX_LANES` at once): one lane per
involved object, within which the events are correlated and written in order. Every correlator state an event
reads or writes (aggregation, observation, spam bucket) lives under a key that includes the involved object,
so lanes never share one. (One write at a time drained about one event per round trip, slower than a few
workers that each write then record: a burst of 2,000 objects overflowed the queue.)
An event goes straight into its lane when nothing is queued before it: a lane task that finished its object
waits for the next one (a task is made only while fewer than `MAX_LANES` exist, and none per event); only
events recorded while every lane is busy, or before `start()`, wait in the queue for the sender task, which
hands them to lanes in order.

The correlator (`manager.events.correlator`, client-go's `events_cache.go`: aggregation, then
observation as a PATCH of the count, then the spam filter) runs in the sender, never in a reconcile.
"""

from __future__ import annotations

from manager.apimachinery.metatime import format_time
from manager.events.broadcaster import (
    EVENTS_DROPPED,
    EVENTS_SENT,
    MAX_LANES,
    MAX_QUEUED_EVENTS,
    EventBroadcaster,
)
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
from manager.events.recorder import EventRecorder, LogOnlyEventRecorder, object_reference

__all__ = [
    "AGGREGATE_INTERVAL",
    "AGGREGATE_MAX_EVENTS",
    "COMBINED_PREFIX",
    "EVENTS_DROPPED",
    "EVENTS_SENT",
    "MAX_LANES",
    "MAX_QUEUED_EVENTS",
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
