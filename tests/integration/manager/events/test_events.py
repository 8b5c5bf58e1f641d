"""Events recorded through the broadcaster land in kubesim, deduplicated and aggregated like client-go's."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
import structlog
from prometheus_client import REGISTRY

from manager import (
    CONFIGMAPS,
    EVENTS,
    ApiClient,
    Controller,
    ControllerContext,
    For,
    InformerFactory,
    Request,
)
from manager.client.rest import create_client
from manager.config.settings import Settings
from manager.events import COMBINED_PREFIX, EventBroadcaster
from tests.helpers import wait_for


@pytest.fixture
async def setup(kubesim: Any) -> AsyncIterator[tuple[ApiClient, EventBroadcaster, dict[str, Any]]]:
    client = await create_client(master=kubesim.url)
    subject = await client.create(
        CONFIGMAPS,
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "subject", "namespace": "default"}},
    )
    broadcaster = EventBroadcaster(client, host="test-instance")
    broadcaster.start()
    yield client, broadcaster, subject
    await broadcaster.stop()
    await client.close()


async def events_about(client: ApiClient, name: str) -> list[dict[str, Any]]:
    listed = await client.list(EVENTS, "default")
    return [e for e in listed["items"] if e["involvedObject"].get("name") == name]


async def test_event_is_created_with_client_go_fields(
    setup: tuple[ApiClient, EventBroadcaster, dict[str, Any]],
) -> None:
    client, broadcaster, subject = setup
    broadcaster.recorder("toy-controller").event(subject, "Normal", "Synced", "synced it")
    [event] = await wait_for(lambda: events_about(client, "subject"), message="event stored")
    assert event["metadata"]["name"].startswith("subject.")
    int(event["metadata"]["name"].split(".", 1)[1], 16)  # <involved>.<hex nanoseconds>
    assert event["reason"] == "Synced" and event["type"] == "Normal" and event["count"] == 1
    assert event["source"] == {"component": "toy-controller", "host": "test-instance"}
    assert event["reportingComponent"] == "toy-controller"
    assert event["reportingInstance"] == "test-instance"
    assert event["involvedObject"]["uid"] == subject["metadata"]["uid"]
    assert event["involvedObject"]["kind"] == "ConfigMap"


async def test_duplicates_patch_the_count(setup: tuple[ApiClient, EventBroadcaster, dict[str, Any]]) -> None:
    client, broadcaster, subject = setup
    recorder = broadcaster.recorder("toy-controller")
    for _ in range(3):
        recorder.event(subject, "Warning", "Failing", "same message")

    async def counted() -> list[dict[str, Any]]:
        found = await events_about(client, "subject")
        return found if found and found[0]["count"] == 3 else []

    [event] = await wait_for(counted, message="one event with count 3")
    assert event["type"] == "Warning"


async def test_similar_events_are_aggregated(
    setup: tuple[ApiClient, EventBroadcaster, dict[str, Any]],
) -> None:
    client, broadcaster, subject = setup
    recorder = broadcaster.recorder("toy-controller")
    for i in range(15):
        recorder.event(subject, "Normal", "Scaled", f"scaled to {i}")

    async def combined() -> list[dict[str, Any]]:
        found = await events_about(client, "subject")
        merged = [e for e in found if e["message"].startswith(COMBINED_PREFIX)]
        return merged if merged and merged[0]["count"] == 6 else []

    [merged] = await wait_for(combined, message="a combined event counting the 6 latest")
    assert merged["message"] == COMBINED_PREFIX + "scaled to 14"
    assert len(await events_about(client, "subject")) == 10  # 9 individual + 1 combined


class Noisy(Controller):
    """Records an event on every reconcile and times how long recording took."""

    name = "noisy-controller"
    concurrency = 2
    watches = (For(CONFIGMAPS, label_selector="app=noisy"),)

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.reconciled: set[str] = set()
        self.slowest = 0.0

    async def reconcile(self, request: Request) -> None:
        obj = self.lister(CONFIGMAPS).get_by_key(request.key)
        started = time.perf_counter()
        self.recorder.event(obj or {}, "Normal", "Seen", f"reconciled {request.key}")
        self.slowest = max(self.slowest, time.perf_counter() - started)
        self.reconciled.add(request.key)


@pytest.mark.parametrize("fault", ["slow", "failing"])
async def test_a_slow_or_failing_api_server_never_holds_up_a_reconcile(kubesim: Any, fault: str) -> None:
    client = await create_client(master=kubesim.url)
    factory = InformerFactory(client)
    broadcaster = EventBroadcaster(client, host="test-instance", max_queued=5)
    broadcaster.start()
    ctl = Noisy(
        ControllerContext(
            settings=Settings(),
            health=None,
            logger=structlog.get_logger(),
            client=client,
            informers=factory,
            events=broadcaster.recorder,
        )
    )
    if fault == "slow":
        kubesim.faults.add_latency(30.0, resource="events")  # every event write hangs
    else:
        kubesim.faults.fail(500, resource="events")  # every event write fails (and is retried later)
    dropped = REGISTRY.get_sample_value("events_dropped_total", {"component": "noisy-controller"}) or 0.0
    task = asyncio.create_task(ctl.run())
    try:
        for i in range(20):
            await client.create(
                CONFIGMAPS,
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": f"noisy-{i}", "namespace": "default", "labels": {"app": "noisy"}},
                },
            )
        await wait_for(lambda: len(ctl.reconciled) == 20, timeout=10, message="every key reconciled")
        assert ctl.slowest < 0.05  # recording only queues the event
        assert broadcaster.pending <= 5
        now_dropped = REGISTRY.get_sample_value("events_dropped_total", {"component": "noisy-controller"})
        assert (now_dropped or 0.0) - dropped >= 20 - 5 - 1  # queue of 5, one event held by the sender
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        kubesim.faults.clear()
        await broadcaster.stop(timeout=0.1)
        await factory.shutdown()
        await client.close()
