"""The recorder's Event: fields built from the object at hand on every event (nothing of the involved object
cached), the timestamp's second reused only within that second, and the aggregate key built with the event
equal to the one the correlator would compute."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from manager.events import EventBroadcaster, EventCorrelator, EventRecorder, aggregate_key, format_time


class Ticks:
    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def job(name: str = "job-1", uid: str = "u-1", rv: str = "10") -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "ns", "uid": uid, "resourceVersion": rv},
    }


def recorder(ticks: Ticks, host: str = "") -> EventRecorder:
    broadcaster = EventBroadcaster(client=None, clock=ticks, host=host)  # type: ignore[arg-type]
    return broadcaster.recorder("job-controller")


@pytest.mark.parametrize(
    "obj",
    [
        job(),
        {"kind": "Node", "apiVersion": "v1", "metadata": {"name": "n1", "uid": "u-n"}},  # cluster-scoped
        {"kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}},  # no uid, apiVersion, rv
        {"metadata": {"name": "bare"}},
        {},
    ],
)
@pytest.mark.parametrize("host", ["", "node-1"])
def test_the_key_built_with_the_event_is_its_aggregate_key(obj: dict[str, Any], host: str) -> None:
    event, key = recorder(Ticks(), host).make_keyed_event(obj, "Warning", "Failed", "boom")
    assert key == aggregate_key(event)
    assert event["reportingInstance"] == host
    assert event["source"] == (
        {"component": "job-controller", "host": host} if host else {"component": "job-controller"}
    )


def test_the_involved_object_is_read_anew_for_every_event() -> None:
    rec = recorder(Ticks())
    first = rec.make_event(job(rv="10"), "Normal", "SuccessfulCreate", "Created pod: job-1-a")
    second = rec.make_event(job(rv="11"), "Normal", "Completed", "Job completed")
    recreated = rec.make_event(job(uid="u-2", rv="12"), "Normal", "SuccessfulCreate", "Created pod: job-1-b")
    assert first["involvedObject"] == {
        "kind": "Job",
        "namespace": "ns",
        "name": "job-1",
        "uid": "u-1",
        "apiVersion": "batch/v1",
        "resourceVersion": "10",
    }
    assert second["involvedObject"]["resourceVersion"] == "11"
    assert (recreated["involvedObject"]["uid"], recreated["involvedObject"]["resourceVersion"]) == (
        "u-2",
        "12",
    )
    assert first["involvedObject"] is not second["involvedObject"]
    # The serialised body keeps client-go's field order of the reference.
    assert list(orjson.loads(orjson.dumps(first))["involvedObject"]) == [
        "kind",
        "namespace",
        "name",
        "uid",
        "apiVersion",
        "resourceVersion",
    ]


def test_timestamps_follow_the_clock_across_a_second_boundary() -> None:
    ticks = Ticks(1_700_000_000.999)
    rec = recorder(ticks)
    stamps = []
    for now in (1_700_000_000.999, 1_700_000_001.0, 1_700_000_001.5, 1_700_000_000.2, 1_700_000_002.0001):
        ticks.now = now
        event = rec.make_event(job(), "Normal", "Completed", "Job completed")
        assert event["firstTimestamp"] == event["lastTimestamp"] == format_time(now)
        stamps.append(event["lastTimestamp"])
    assert stamps == [
        "2023-11-14T22:13:20Z",
        "2023-11-14T22:13:21Z",
        "2023-11-14T22:13:21Z",
        "2023-11-14T22:13:20Z",  # a clock stepped back gets its own second's text
        "2023-11-14T22:13:22Z",
    ]


def test_keyed_events_aggregate_and_repeat_as_the_computed_ones() -> None:
    """Ten similar events through the recorder's key: the tenth combined, the next one a PATCH of the combined
    event; the same as when the correlator computes each key."""
    ticks = Ticks()
    rec = recorder(ticks)
    keyed, computed = EventCorrelator(clock=ticks), EventCorrelator(clock=ticks)
    results = []
    for i in range(11):
        ticks.now += 1.0
        event, key = rec.make_keyed_event(job(rv=str(i)), "Warning", "Failed", f"m{i}")
        result = keyed.correlate(event, key)
        assert computed.correlate(event) == result
        results.append(result)
    assert [r.event["message"] for r in results[:9]] == [f"m{i}" for i in range(9)]
    assert [r.patch for r in results[:10]] == [None] * 10
    assert results[9].event["message"] == "(combined from similar events): m9"
    assert results[10].event["message"] == "(combined from similar events): m10"
    assert results[10].patch is not None and results[10].patch["count"] == 2
