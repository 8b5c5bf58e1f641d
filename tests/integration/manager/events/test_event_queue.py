"""The broadcaster's bound on pending events and its concurrent sending, against kubesim over HTTP."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, MutableMapping
from typing import Any

import pytest
from prometheus_client import REGISTRY
from structlog.testing import capture_logs

from manager import CONFIGMAPS, EVENTS, ApiClient
from manager.client.rest import create_client
from manager.events import EventBroadcaster
from tests.helpers import wait_for


@pytest.fixture
async def client(kubesim: Any) -> AsyncIterator[ApiClient]:
    client = await create_client(master=kubesim.url, qps=0)
    yield client
    await client.close()


async def subjects(client: ApiClient, count: int, prefix: str) -> list[dict[str, Any]]:
    return [
        await client.create(
            CONFIGMAPS,
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"{prefix}-{i}", "namespace": "default"},
            },
        )
        for i in range(count)
    ]


async def events_by_object(client: ApiClient) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for event in (await client.list(EVENTS, "default"))["items"]:
        found.setdefault(event["involvedObject"]["name"], []).append(event)
    return found


def dropped(component: str) -> float:
    return REGISTRY.get_sample_value("events_dropped_total", {"component": component}) or 0.0


def drop_logs(logs: list[MutableMapping[str, Any]]) -> list[str]:
    return [entry["event"] for entry in logs if "event queue" in entry["event"]]


async def test_drops_are_counted_and_logged_once_per_burst(client: ApiClient) -> None:
    [subject, *_] = await subjects(client, 12, "full")
    broadcaster = EventBroadcaster(client, max_queued=3)  # not started yet: nothing drains
    recorder = broadcaster.recorder("burst-controller")
    before = dropped("burst-controller")
    with capture_logs() as logs:
        for i in range(10):
            recorder.event(subject, "Normal", "Step", f"step {i}")
        assert broadcaster.pending == 3
        assert dropped("burst-controller") - before == 7
        assert drop_logs(logs) == ["event queue full: dropping events until it drains"]
        broadcaster.start()
        await wait_for(lambda: broadcaster.pending == 0, message="the three queued events are written")
        recorder.event(subject, "Normal", "Step", "after the burst")
        assert [
            entry.get("dropped") for entry in logs if entry["event"] == "event queue accepts events again"
        ] == [7]
        await wait_for(lambda: broadcaster.pending == 0)
        await broadcaster.stop()
        for i in range(5):  # a second burst, logged again
            recorder.event(subject, "Normal", "Again", f"again {i}")
        assert drop_logs(logs).count("event queue full: dropping events until it drains") == 2
    assert dropped("burst-controller") - before == 9
    steps = (await events_by_object(client))["full-0"]
    assert sorted(e["message"] for e in steps if e["reason"] == "Step") == [
        "after the burst",
        "step 0",
        "step 1",
        "step 2",
    ]
    broadcaster.start()  # the three queued while stopped are sent after a restart
    await wait_for(lambda: broadcaster.pending == 0)
    await broadcaster.stop()


@pytest.mark.slow
async def test_objects_are_sent_concurrently_and_each_one_in_order(kubesim: Any, client: ApiClient) -> None:
    objects = await subjects(client, 12, "lane")
    kubesim.faults.add_latency(0.5, resource="events")
    broadcaster = EventBroadcaster(client, max_lanes=16)
    recorder = broadcaster.recorder("lane-controller")
    broadcaster.start()
    try:
        started = time.monotonic()
        for _ in range(3):  # each object's three duplicates: one create, then patches of its count
            for obj in objects:
                recorder.event(obj, "Normal", "Seen", "seen")
        await wait_for(lambda: broadcaster.pending == 0, timeout=30, message="every event written")
        elapsed = time.monotonic() - started
    finally:
        kubesim.faults.clear()
        await broadcaster.stop()
    found = await events_by_object(client)
    assert {name: [e["count"] for e in events] for name, events in found.items()} == {
        f"lane-{i}": [3] for i in range(12)
    }
    # 36 writes of 0.5 s each: 18 s one after the other, 1.5 s when the 12 objects go side by side.
    assert elapsed < 9, f"{elapsed:.1f} s: the objects were not sent concurrently"


async def test_a_burst_of_records_between_writes_does_not_drop(client: ApiClient) -> None:
    """Workers that each write then record an event (the benchmark's operator): the sender keeps up with
    them, where one write at a time falls behind by about a write per worker round."""
    objects = await subjects(client, 400, "burst")
    broadcaster = EventBroadcaster(client, max_queued=50)
    recorder = broadcaster.recorder("keep-up-controller")
    broadcaster.start()
    before = dropped("keep-up-controller")
    peak = 0

    async def worker(mine: list[dict[str, Any]]) -> None:
        nonlocal peak
        for obj in mine:
            await client.patch(CONFIGMAPS, obj["metadata"]["name"], {"data": {"seen": "yes"}}, "default")
            recorder.event(obj, "Normal", "Seen", "seen")
            peak = max(peak, broadcaster.pending)

    try:
        await asyncio.gather(*(worker(objects[i::8]) for i in range(8)))
        await wait_for(lambda: broadcaster.pending == 0, timeout=30)
    finally:
        await broadcaster.stop()
    assert dropped("keep-up-controller") == before, f"dropped events (peak pending {peak})"
    found = await events_by_object(client)
    assert sum(1 for name in found if name.startswith("burst-")) == 400


async def test_events_wait_in_order_while_every_lane_is_busy(kubesim: Any, client: ApiClient) -> None:
    """Two lanes for six objects: events recorded before start() or while both lanes are busy wait in the
    queue; each object's events are still written in the order they were recorded."""
    objects = await subjects(client, 6, "busy")
    kubesim.faults.add_latency(0.02, resource="events")
    broadcaster = EventBroadcaster(client, max_lanes=2)
    recorder = broadcaster.recorder("busy-controller")
    try:
        for step in range(3):
            for obj in objects:
                recorder.event(obj, "Normal", "Step", f"step {step}")
            if step == 0:
                broadcaster.start()  # step 0 waits in the queue: steps 1 and 2 must not overtake it
        assert broadcaster.pending == 18
        await wait_for(lambda: broadcaster.pending == 0, timeout=30, message="every event written")
        recorder.event(objects[0], "Normal", "Step", "step 3")  # lanes free again: straight into one
        await wait_for(lambda: broadcaster.pending == 0, timeout=30)
    finally:
        kubesim.faults.clear()
        await broadcaster.stop()
    written = {
        name: [e["message"] for e in sorted(events, key=lambda e: int(e["metadata"]["resourceVersion"]))]
        for name, events in (await events_by_object(client)).items()
        if name.startswith("busy-")
    }
    steps = ["step 0", "step 1", "step 2"]
    assert written == {"busy-0": [*steps, "step 3"], **{f"busy-{i}": steps for i in range(1, 6)}}


async def test_lane_tasks_wait_for_the_next_object_and_stop_ends_them(client: ApiClient) -> None:
    """A lane task that wrote its object's events takes the next object's instead of ending (never more
    than `max_lanes` of them); stop() ends the waiting ones and gives up what is in flight; a restart opens
    lanes again."""
    objects = await subjects(client, 8, "reuse")
    broadcaster = EventBroadcaster(client, max_lanes=2)
    recorder = broadcaster.recorder("reuse-controller")
    broadcaster.start()
    lane_tasks: set[asyncio.Task[None]] = set()
    try:
        for obj in objects[:5]:  # one at a time: the one lane task takes each object in turn
            recorder.event(obj, "Normal", "Step", "one at a time")
            lane_tasks |= broadcaster._lane_tasks
            await wait_for(lambda: broadcaster.pending == 0, timeout=10)
        assert len(lane_tasks) == 1
        for obj in objects[5:]:  # three objects at once: two lanes, the third waits in the queue
            recorder.event(obj, "Normal", "Step", "side by side")
        lane_tasks |= broadcaster._lane_tasks
        await wait_for(lambda: broadcaster.pending == 0, timeout=10)
        assert len(lane_tasks | broadcaster._lane_tasks) == 2
    finally:
        await broadcaster.stop()
    assert all(task.done() for task in lane_tasks)
    found = await events_by_object(client)
    assert sorted(name for name in found if name.startswith("reuse-")) == [f"reuse-{i}" for i in range(8)]

    broadcaster.start()
    recorder.event(objects[0], "Normal", "Again", "after a restart")
    await broadcaster.stop(timeout=0)  # in flight or not yet taken: given up, nothing left pending
    assert broadcaster.pending == 0
    assert not broadcaster._lane_tasks
    broadcaster.start()
    recorder.event(objects[1], "Normal", "Again", "after a second restart")
    await wait_for(lambda: broadcaster.pending == 0, timeout=10)
    await broadcaster.stop()
    again = [e["message"] for e in (await events_by_object(client))["reuse-1"] if e["reason"] == "Again"]
    assert again == ["after a second restart"]
