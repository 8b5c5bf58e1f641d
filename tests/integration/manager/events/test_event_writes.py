"""How the lanes write a new event and judge a failed create, against kubesim over HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from prometheus_client import REGISTRY

from manager import EVENTS, ApiClient
from manager.client.rest import create_client
from manager.events import COMBINED_PREFIX, EventBroadcaster
from tests.helpers import wait_for

SUBJECT = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {"name": "writes", "namespace": "default", "uid": "uid-writes", "resourceVersion": "7"},
}


@pytest.fixture
async def client(kubesim: Any) -> AsyncIterator[ApiClient]:
    client = await create_client(master=kubesim.url, qps=0)
    yield client
    await client.close()


def sent(action: str) -> float:
    return REGISTRY.get_sample_value("events_sent_total", {"action": action}) or 0.0


async def messages(client: ApiClient) -> list[str]:
    return [event["message"] for event in (await client.list(EVENTS, "default"))["items"]]


async def test_a_refused_create_is_written_on_a_later_attempt(kubesim: Any, client: ApiClient) -> None:
    kubesim.faults.fail(409, verb="create", resource="events", count=1)  # a Conflict: worth another try
    broadcaster = EventBroadcaster(client, retry_sleep=0.05)
    broadcaster.start()
    errors, creates = sent("error"), sent("create")
    try:
        broadcaster.recorder("writes-controller").event(SUBJECT, "Normal", "SuccessfulCreate", "once")
        await wait_for(lambda: broadcaster.pending == 0, timeout=5, message="the event written")
        assert await messages(client) == ["once"]
        assert (sent("error") - errors, sent("create") - creates) == (1, 1)
    finally:
        kubesim.faults.clear()
        await broadcaster.stop(timeout=1)


async def test_a_create_of_an_existing_event_is_settled_without_retry(client: ApiClient) -> None:
    now = 1_700_000_000.0
    broadcaster = EventBroadcaster(client, clock=lambda: now, retry_sleep=3600)  # a retry would never end
    broadcaster.start()
    recorder = broadcaster.recorder("writes-controller")
    # The name the broadcaster will give its first event (a fixed clock), taken already.
    name = f"writes.{int(now * 1e9):x}"
    existing = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": "default"},
        "involvedObject": {"kind": "Job", "namespace": "default", "name": "writes", "uid": "uid-writes"},
        "reason": "Earlier",
        "message": "already there",
        "type": "Normal",
    }
    await client.create(EVENTS, existing, "default")
    errors, creates = sent("error"), sent("create")
    try:
        recorder.event(SUBJECT, "Normal", "SuccessfulCreate", "second")
        await wait_for(lambda: broadcaster.pending == 0, timeout=5, message="the event settled")
        assert await messages(client) == ["already there"]  # AlreadyExists: nothing overwritten
        assert (sent("error") - errors, sent("create") - creates) == (0, 0)
    finally:
        await broadcaster.stop(timeout=1)


async def test_the_tenth_similar_event_is_created_as_the_combined_one(client: ApiClient) -> None:
    broadcaster = EventBroadcaster(client)
    broadcaster.start()
    recorder = broadcaster.recorder("writes-controller")
    try:
        for i in range(10):  # the tenth distinct message within the interval is the first combined one
            recorder.event(SUBJECT, "Normal", "Scaled", f"scaled to {i}")
        await wait_for(lambda: broadcaster.pending == 0, timeout=5, message="every event written")
        events = (await client.list(EVENTS, "default"))["items"]
        combined = [e for e in events if e["message"].startswith(COMBINED_PREFIX)]
        assert len(events) == 10
        assert [(e["message"], e["count"]) for e in combined] == [(COMBINED_PREFIX + "scaled to 9", 1)]
    finally:
        await broadcaster.stop(timeout=1)
