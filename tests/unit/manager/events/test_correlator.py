"""client-go's event correlation (events_cache_test cases) on a fake clock: dedup, aggregation, spam."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from structlog.testing import capture_logs

from manager.events import COMBINED_PREFIX, EventBroadcaster, EventCorrelator, EventRecorder


class Ticks:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web-1", "namespace": "default", "uid": "u-1", "resourceVersion": "7"},
}
OTHER = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web-2", "namespace": "default", "uid": "u-2"},
}


def make(
    ticks: Ticks,
    obj: dict[str, Any] = POD,
    reason: str = "Started",
    message: str = "hello",
    type: str = "Normal",
) -> dict[str, Any]:
    broadcaster = EventBroadcaster(client=None, clock=ticks)  # type: ignore[arg-type]
    return EventRecorder(broadcaster, "unit-controller").make_event(obj, type, reason, message)


def sent(correlator: EventCorrelator, event: dict[str, Any], rv: str = "1") -> dict[str, Any]:
    """Correlate, then play the server: echo the object with a resourceVersion."""
    result = correlator.correlate(event)
    assert not result.skip
    answer = {**result.event, "metadata": {**result.event["metadata"], "resourceVersion": rv}}
    correlator.update_state(answer)
    return {"event": result.event, "patch": result.patch}


def test_event_shape_like_client_go() -> None:
    ticks = Ticks()
    event = make(ticks)
    assert event["metadata"]["name"] == f"web-1.{int(ticks.now * 1e9):x}"
    assert event["metadata"]["namespace"] == "default"
    assert event["involvedObject"] == {
        "kind": "Pod",
        "namespace": "default",
        "name": "web-1",
        "uid": "u-1",
        "apiVersion": "v1",
        "resourceVersion": "7",
    }
    # kube-controller-manager records with EventSource{Component}: no host, so reportingInstance is ""
    assert event["source"] == {"component": "unit-controller"}
    assert event["reportingComponent"] == "unit-controller"
    assert event["reportingInstance"] == ""
    assert event["count"] == 1
    assert event["firstTimestamp"] == event["lastTimestamp"] == "2023-11-14T22:13:20Z"


def test_cluster_scoped_object_events_go_to_default_namespace() -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "uid": "n"}}
    assert make(Ticks(), node)["metadata"]["namespace"] == "default"


def test_identical_events_become_patches_with_increasing_count() -> None:
    ticks = Ticks()
    correlator = EventCorrelator(clock=ticks)
    first = sent(correlator, make(ticks))
    assert first["patch"] is None
    ticks.now += 5
    second = sent(correlator, make(ticks), rv="2")
    assert second["patch"] == {"count": 2, "lastTimestamp": "2023-11-14T22:13:25Z", "message": "hello"}
    assert second["event"]["metadata"]["name"] == first["event"]["metadata"]["name"]
    assert second["event"]["firstTimestamp"] == first["event"]["firstTimestamp"]
    third = sent(correlator, make(ticks), rv="3")
    assert third["patch"] is not None and third["patch"]["count"] == 3


def test_different_objects_are_not_deduplicated() -> None:
    ticks = Ticks()
    correlator = EventCorrelator(clock=ticks)
    assert sent(correlator, make(ticks))["patch"] is None
    assert sent(correlator, make(ticks, OTHER))["patch"] is None
    assert sent(correlator, make(ticks, reason="Other"))["patch"] is None


def test_ten_similar_events_are_combined() -> None:
    ticks = Ticks()
    correlator = EventCorrelator(clock=ticks)
    results = [sent(correlator, make(ticks, message=f"message {i}")) for i in range(12)]
    assert all(not r["event"]["message"].startswith(COMBINED_PREFIX) for r in results[:9])
    combined = results[9:]
    expected = [COMBINED_PREFIX + f"message {i}" for i in (9, 10, 11)]
    assert [r["event"]["message"] for r in combined] == expected
    assert combined[0]["patch"] is None  # the first combined event is created
    assert combined[1]["patch"] is not None and combined[1]["patch"]["count"] == 2
    assert combined[2]["patch"] is not None and combined[2]["patch"]["count"] == 3
    assert combined[1]["event"]["metadata"]["name"] == combined[0]["event"]["metadata"]["name"]


def test_aggregation_window_expires() -> None:
    ticks = Ticks()
    correlator = EventCorrelator(clock=ticks)
    for i in range(9):
        sent(correlator, make(ticks, message=f"m{i}"))
        ticks.now += 1
    ticks.now += 601
    fresh = sent(correlator, make(ticks, message="m-late"))
    assert not fresh["event"]["message"].startswith(COMBINED_PREFIX)


def test_spam_filter_burst_25_then_one_per_five_minutes() -> None:
    ticks = Ticks()
    correlator = EventCorrelator(clock=ticks)
    reasons = [f"R{i}" for i in range(40)]  # distinct reasons: no aggregation, one spam bucket
    skipped = [correlator.correlate(make(ticks, reason=r)).skip for r in reasons]
    assert skipped == [False] * 25 + [True] * 15
    # another object has its own bucket
    assert correlator.correlate(make(ticks, OTHER, reason="X")).skip is False
    ticks.now += 299
    assert correlator.correlate(make(ticks, reason="late")).skip is True
    ticks.now += 2
    assert correlator.correlate(make(ticks, reason="later")).skip is False
    assert correlator.correlate(make(ticks, reason="later2")).skip is True


@pytest.mark.parametrize("event_type", ["Normal", "Warning"])
def test_spam_buckets_are_per_type(event_type: str) -> None:
    ticks = Ticks()
    correlator = EventCorrelator(clock=ticks)
    for i in range(25):
        correlator.correlate(make(ticks, reason=f"R{i}", type=event_type))
    other = "Warning" if event_type == "Normal" else "Normal"
    assert correlator.correlate(make(ticks, reason="x", type=other)).skip is False
    assert correlator.correlate(make(ticks, reason="y", type=event_type)).skip is True


async def test_full_queue_drops_and_counts() -> None:
    from prometheus_client import REGISTRY

    ticks = Ticks()
    broadcaster = EventBroadcaster(client=None, clock=ticks, max_queued=3)  # type: ignore[arg-type]
    recorder = broadcaster.recorder("drop-test")
    before = REGISTRY.get_sample_value("events_dropped_total", {"component": "drop-test"}) or 0
    for i in range(5):
        recorder.event(POD, "Normal", "R", f"m{i}")
    assert broadcaster.pending == 3
    assert REGISTRY.get_sample_value("events_dropped_total", {"component": "drop-test"}) == before + 2
    recorder.event({"not": "an object"}, "Normal", "R", "m")  # unreadable objects never raise


def test_event_names_are_unique_even_within_one_clock_tick() -> None:
    ticks = Ticks()
    broadcaster = EventBroadcaster(client=None, clock=ticks)  # type: ignore[arg-type]
    recorder = broadcaster.recorder("c")
    names = {recorder.make_event(POD, "Normal", "R", f"m{i}")["metadata"]["name"] for i in range(100)}
    assert len(names) == 100


def test_observations_are_kept_least_recently_used_first_out() -> None:
    """golang-lru as client-go uses it: a hit refreshes an entry, a new one beyond the size evicts the
    least recently used (a shrunken cache stands for the 4096 entries)."""
    ticks = Ticks()
    correlator = EventCorrelator(clock=ticks)
    correlator._observed.size = 2
    a, b, c = (make(ticks, reason=r) for r in ("A", "B", "C"))
    sent(correlator, a)
    sent(correlator, b)
    assert sent(correlator, a)["patch"] is not None  # a hit: A is now the most recent
    sent(correlator, c)  # evicts B, the least recently used
    assert sent(correlator, a)["patch"] is not None
    assert sent(correlator, b)["patch"] is None  # forgotten: created again


def test_update_state_with_the_correlation_key_patches_the_answered_object() -> None:
    ticks = Ticks()
    correlator = EventCorrelator(clock=ticks)
    first = correlator.correlate(make(ticks))
    answer = {**first.event, "metadata": {**first.event["metadata"], "resourceVersion": "41"}, "count": 1}
    correlator.update_state(answer, first.key)
    again = correlator.correlate(make(ticks))
    assert again.patch is not None and again.patch["count"] == 2
    assert again.event["metadata"]["resourceVersion"] == "41"
    assert again.event["metadata"]["name"] == first.event["metadata"]["name"]


def test_an_undecoded_answer_is_read_when_the_event_repeats() -> None:
    """`update_state_raw`: the answer's name, resourceVersion, count and firstTimestamp, as `update_state`
    takes them, once the same event comes again; a later `update_state` supersedes it."""
    ticks = Ticks()
    correlator = EventCorrelator(clock=ticks)
    first = correlator.correlate(make(ticks))
    assert first.key is not None
    answer = {
        **first.event,
        "metadata": {**first.event["metadata"], "name": "renamed", "resourceVersion": "41"},
        "count": 5,
        "firstTimestamp": "2020-01-01T00:00:00Z",
    }
    correlator.update_state_raw(orjson.dumps(answer), first.key)
    again = correlator.correlate(make(ticks))
    assert again.patch is not None and again.patch["count"] == 6
    assert again.event["metadata"]["name"] == "renamed"
    assert again.event["metadata"]["resourceVersion"] == "41"
    assert again.event["firstTimestamp"] == "2020-01-01T00:00:00Z"
    correlator.update_state_raw(orjson.dumps({**answer, "count": 9}), first.key)
    correlator.update_state(
        {**answer, "count": 6, "metadata": {**answer["metadata"], "resourceVersion": "42"}}
    )
    third = correlator.correlate(make(ticks))
    assert third.patch is not None and third.patch["count"] == 7
    assert third.event["metadata"]["resourceVersion"] == "42"


def test_an_undecodable_answer_leaves_the_record_as_it_was() -> None:
    ticks = Ticks()
    correlator = EventCorrelator(clock=ticks)
    first = correlator.correlate(make(ticks))
    assert first.key is not None
    with capture_logs() as logs:
        correlator.update_state_raw(b"[1, 2]", first.key)
        again = correlator.correlate(make(ticks))
    assert again.patch is not None and again.patch["count"] == 2
    assert again.event["metadata"]["name"] == first.event["metadata"]["name"]
    assert "resourceVersion" not in again.event["metadata"]  # as sent: the answer was never taken
    assert [entry["log_level"] for entry in logs] == ["error"]


def test_an_answer_for_an_evicted_key_is_decoded_at_once() -> None:
    ticks = Ticks()
    correlator = EventCorrelator(clock=ticks)
    first = correlator.correlate(make(ticks))
    assert first.key is not None
    correlator._observed.clear()  # evicted between the write and its answer
    answer = {**first.event, "metadata": {**first.event["metadata"], "resourceVersion": "7"}}
    correlator.update_state_raw(orjson.dumps(answer), first.key)
    again = correlator.correlate(make(ticks))
    assert again.patch is not None and again.event["metadata"]["resourceVersion"] == "7"
    with pytest.raises(orjson.JSONDecodeError):  # as update_state fails on it: the write's error
        correlator.update_state_raw(b"not json", ("other",))
