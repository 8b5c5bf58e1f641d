"""Events recorded through the broadcaster land in kubesim, deduplicated and aggregated like client-go's."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from manager import CONFIGMAPS, EVENTS, ApiClient
from manager.client.rest import create_client
from manager.events import COMBINED_PREFIX, EventBroadcaster
from tests.helpers import wait_for


@pytest.fixture
async def setup(kubesim: Any) -> AsyncIterator[tuple[ApiClient, EventBroadcaster, dict[str, Any]]]:
    client = await create_client(master=kubesim.url)
    subject = await client.create(CONFIGMAPS, {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "subject", "namespace": "default"}})
    broadcaster = EventBroadcaster(client, instance="test-instance")
    broadcaster.start()
    yield client, broadcaster, subject
    await broadcaster.stop()
    await client.close()


async def events_about(client: ApiClient, name: str) -> list[dict[str, Any]]:
    listed = await client.list(EVENTS, "default")
    return [e for e in listed["items"] if e["involvedObject"].get("name") == name]


async def test_event_is_created_with_client_go_fields(
    setup: tuple[ApiClient, EventBroadcaster, dict[str, Any]]
) -> None:
    client, broadcaster, subject = setup
    broadcaster.recorder("toy-controller").event(subject, "Normal", "Synced", "synced it")
    [event] = await wait_for(lambda: events_about(client, "subject"), message="event stored")
    assert event["metadata"]["name"].startswith("subject.")
    int(event["metadata"]["name"].split(".", 1)[1], 16)  # <involved>.<hex nanoseconds>
    assert event["reason"] == "Synced" and event["type"] == "Normal" and event["count"] == 1
    assert event["source"]["component"] == "toy-controller"
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
    setup: tuple[ApiClient, EventBroadcaster, dict[str, Any]]
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
