"""A bookmark never overtakes the events it covers: events queued for a watch while the write of its previous
batch waits on a slow client go out before the bookmark whose resourceVersion includes them, also the one
that ends the watch at its timeout (a client resuming from that bookmark would otherwise never see them)."""

from __future__ import annotations

import asyncio

import aiohttp
import orjson
import pytest

from kubesim import KubeSim
from kubesim.pytest_plugin import KubeSimFactory
from manager.testing import wait_for

CMS = "/api/v1/namespaces/default/configmaps"
FILLER = "x" * 100_000
# Far more than the client's read buffer and both kernels' socket buffers hold: the server's write must wait.
FILL_COUNT = 250
TIMEOUT = 1


def create(sim: KubeSim, name: str, data: str = "") -> int:
    body = {"metadata": {"name": name, "namespace": "default"}, "data": {"d": data}}
    obj = sim.store.create("configmaps", body)
    return int(obj["metadata"]["resourceVersion"])


@pytest.mark.slow  # waits for the watch's one-second timeout
async def test_events_queued_behind_a_slow_client_precede_the_timeout_bookmark(
    kubesim_factory: KubeSimFactory,
) -> None:
    sim = await kubesim_factory(kubelet=False, bookmark_interval=3600.0)
    start = sim.store.resource_version
    query = f"watch=true&allowWatchBookmarks=true&timeoutSeconds={TIMEOUT}&resourceVersion={start}"
    async with aiohttp.ClientSession() as session, session.get(f"{sim.url}{CMS}?{query}") as answer:
        opened = asyncio.get_running_loop().time()
        filled = [create(sim, f"fill-{i}", FILLER) for i in range(FILL_COUNT)]
        # the handler drained them all into one write, which now waits for this client to read
        await wait_for(lambda: sim.watches.buffered_lines == 0, 10, message="batch written")
        late = [create(sim, f"late-{i}") for i in range(3)]  # queued while that write waits
        loop = asyncio.get_running_loop()
        await wait_for(lambda: loop.time() > opened + TIMEOUT + 0.2, 5, message="the watch's timeout passed")
        body = await answer.read()
    events = [orjson.loads(line) for line in body.splitlines()]
    bookmarks = [int(e["object"]["metadata"]["resourceVersion"]) for e in events if e["type"] == "BOOKMARK"]
    seen = {int(e["object"]["metadata"]["resourceVersion"]) for e in events if e["type"] == "ADDED"}
    assert bookmarks, "the watch ended at its timeout with a bookmark"
    covered = [rv for rv in filled + late if rv <= bookmarks[-1]]
    assert late[-1] in covered  # the bookmark was written after the late events were committed
    assert [rv for rv in covered if rv not in seen] == []
