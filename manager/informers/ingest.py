"""The reflector's hot path: the events of each network read of a watch, decoded and applied in one block.

One network read's lines are decoded and applied in one synchronous block (one clock read, one counter
update per read); the GC policy keeps the collector from ever walking the new cache objects (see gcpolicy).
The events go to the sink in one call per read, or one call per event when every handler takes them inline
(then each replaced object is freed before the next line is decoded, while that memory is still in the CPU
cache; benchmarks/informer_ingest.py --interleave measures the gain).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from manager.apimachinery.objects import Obj
from manager.client.errors import ApiError, error_from_status
from manager.client.managedfields import decode_watch_span_stripped
from manager.client.watch import Span, WatchEvent, WatchStream
from manager.informers.gcpolicy import GC_POLICY
from manager.informers.history import NewHistory, went_backwards


class ReflectorSink(Protocol):
    """Where the reflector delivers state: the informer."""

    async def replace(self, items: list[Obj], resource_version: str) -> None: ...

    def apply_events(self, events: list[tuple[str, Obj]], stripped: bool = False) -> None: ...

    def dispatches_inline(self) -> bool: ...

    def apply_one(self, event_type: str, obj: Obj, stripped: bool = False) -> None: ...

    def record_bad_object(self, obj: object, error: Exception) -> None: ...

    def cached(self, key: str) -> Obj | None: ...

    def history_restarted(self) -> None: ...


class Ingesting(Protocol):
    """What of the reflector the ingest loop reads and updates."""

    name: str
    sink: ReflectorSink
    decode_span: Callable[[bytes, int, int], WatchEvent]
    received: int
    last_sync_resource_version: str
    last_activity: float | None

    def _bad_line(self, span: Span, exc: ValueError) -> None: ...


async def consume_events(reflector: Ingesting, stream: WatchStream, clock: Callable[[], float]) -> None:
    """Apply the stream's events to the reflector's sink until the stream ends; raises the ApiError of an
    ERROR event, NewHistory for a bookmark below the synced resourceVersion."""
    sink_apply = reflector.sink.apply_events
    sink_apply_one = reflector.sink.apply_one
    dispatches_inline = reflector.sink.dispatches_inline
    decode = reflector.decode_span
    bad_line = reflector._bad_line
    # Decoded without managedFields: the sink may skip a transform that would only drop them.
    stripped = decode is decode_watch_span_stripped
    gc_policy = GC_POLICY
    async for spans in stream.spans():
        events: list[tuple[str, Obj]] = []
        append = events.append
        error: ApiError | None = None
        one_by_one = dispatches_inline()
        # The read's last resourceVersion is looked up once after the loop, not per event (per event
        # only when applying one by one, before the transform runs); the last bookmark's is kept with
        # the number of events before it (the ones after it come later).
        bookmark_rv = None
        bookmarked_at = 0
        applied_rv = None
        paused = gc_policy.begin_batch()
        try:
            for buffer, start, end in spans:
                try:
                    event = decode(buffer, start, end)
                except ValueError as exc:
                    bad_line((buffer, start, end), exc)
                    continue
                event_type = event[0]
                if event_type == "BOOKMARK":
                    reflector.received += 1
                    rv = (event[1].get("metadata") or {}).get("resourceVersion")
                    if rv:
                        bookmark_rv, bookmarked_at, applied_rv = rv, len(events), None
                elif event_type == "ERROR":
                    error = error_from_status(event[1])
                    break
                else:
                    append(event)
                    if one_by_one:
                        meta = event[1].get("metadata")
                        if type(meta) is dict and (event_rv := meta.get("resourceVersion")):
                            applied_rv = event_rv
                        sink_apply_one(event_type, event[1], stripped)
            # Before the sink runs, as before: a transform may replace or change the objects.
            if one_by_one:
                rv = applied_rv or bookmark_rv
            else:
                rv = _last_resource_version(events, bookmarked_at) or bookmark_rv
            if events:
                reflector.received += len(events)
                if not one_by_one:
                    sink_apply(events, stripped)
            # a bookmark is the server's current RV: below ours, the server lost our history
            last = reflector.last_sync_resource_version
            if bookmark_rv and went_backwards(last, bookmark_rv):
                raise NewHistory(reflector.name, last, bookmark_rv)
            if rv:
                reflector.last_sync_resource_version = rv
        finally:
            gc_policy.end_batch(paused)
        if error is not None:
            raise error
        reflector.last_activity = clock()


def _last_resource_version(events: list[tuple[str, Obj]], after: int) -> Any:
    """The last non-empty `metadata.resourceVersion` among `events[after:]`, else None."""
    for index in range(len(events) - 1, after - 1, -1):
        meta = events[index][1].get("metadata")
        if type(meta) is dict:
            rv = meta.get("resourceVersion")
            if rv:
                return rv
    return None
