"""A watch's initial events (a streaming list's state, a plain watch's synthetic ADDED events, a resumed
watch's replay from history) never count toward kubesim's slow-watcher limit; live events still do."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
import pytest

from kubesim import KubeSim
from kubesim.pytest_plugin import KubeSimFactory

CMS = "/api/v1/namespaces/default/configmaps"
LIMIT = 20  # the slow-watcher limit of these tests' kubesim
COUNT = 3 * LIMIT  # initial events queued at once: three times the limit


@pytest.fixture
async def sim(kubesim_factory: KubeSimFactory) -> KubeSim:
    started = await kubesim_factory(kubelet=False, history_size=10 * COUNT)
    started.watches.max_buffered = LIMIT
    return started


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as s:
        yield s


def create_configmaps(sim: KubeSim, prefix: str, count: int) -> None:
    """Written straight into the store without yielding: every watcher gets them queued at once."""
    for i in range(count):
        sim.store.create("configmaps", {"metadata": {"name": f"{prefix}{i}", "namespace": "default"}})


async def read_events(resp: aiohttp.ClientResponse, count: int) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for _ in range(count):
        line = await asyncio.wait_for(resp.content.readline(), 10)
        assert line, f"the watch ended after {len(events)} events"
        events.append(orjson.loads(line))
    return events


async def assert_still_open(sim: KubeSim, resp: aiohttp.ClientResponse) -> None:
    create_configmaps(sim, "live", 1)
    (event,) = await read_events(resp, 1)
    assert event["type"] == "ADDED" and event["object"]["metadata"]["name"] == "live0"


async def test_a_streaming_list_larger_than_the_limit_is_not_dropped(
    sim: KubeSim, session: aiohttp.ClientSession
) -> None:
    create_configmaps(sim, "cm", COUNT)
    query = "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
    async with session.get(f"{sim.url}{CMS}?{query}") as resp:
        events = await read_events(resp, COUNT + 1)
        assert [e["type"] for e in events] == ["ADDED"] * COUNT + ["BOOKMARK"]
        assert events[-1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
        await assert_still_open(sim, resp)


async def test_a_plain_watch_of_the_whole_state_is_not_dropped(
    sim: KubeSim, session: aiohttp.ClientSession
) -> None:
    create_configmaps(sim, "cm", COUNT)
    async with session.get(f"{sim.url}{CMS}?watch=true") as resp:
        events = await read_events(resp, COUNT)
        assert {e["object"]["metadata"]["name"] for e in events} == {f"cm{i}" for i in range(COUNT)}
        await assert_still_open(sim, resp)


async def test_a_replay_from_history_larger_than_the_limit_is_not_dropped(
    sim: KubeSim, session: aiohttp.ClientSession
) -> None:
    rv = sim.store.resource_version
    create_configmaps(sim, "cm", COUNT)
    async with session.get(f"{sim.url}{CMS}?watch=true&resourceVersion={rv}") as resp:
        events = await read_events(resp, COUNT)
        assert [e["object"]["metadata"]["name"] for e in events] == [f"cm{i}" for i in range(COUNT)]
        await assert_still_open(sim, resp)


async def test_live_events_beyond_the_limit_still_drop_the_watcher(
    sim: KubeSim, session: aiohttp.ClientSession
) -> None:
    create_configmaps(sim, "cm", COUNT)
    query = "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
    async with session.get(f"{sim.url}{CMS}?{query}") as resp:
        await read_events(resp, COUNT + 1)
        create_configmaps(sim, "burst", LIMIT + 1)  # queued before the handler runs again: too slow
        events: list[dict[str, Any]] = []
        while line := await asyncio.wait_for(resp.content.readline(), 10):  # until the stream ends
            events.append(orjson.loads(line))
        # Dropped: what was queued is written, then the stream ends (the client resumes from its last RV).
        assert [e["object"]["metadata"]["name"] for e in events] == [f"burst{i}" for i in range(LIMIT + 1)]
