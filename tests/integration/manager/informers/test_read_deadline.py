"""The watch read deadline against kubesim: a stream that goes silent (no bookmarks) or a watch whose
answer never comes is dropped after the idle timeout and watched again from the last resourceVersion,
without a relist, and events keep flowing."""

from __future__ import annotations

from typing import Any

import structlog

from manager.apimachinery.resources import CONFIGMAPS
from manager.client import create_client
from manager.informers import Backoff, InformerFactory
from manager.informers.deadline import ReadDeadline
from tests.helpers import wait_for

NS = "default"


def configmap(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": NS}, "data": {}}


async def test_a_silent_watch_is_dropped_and_resumed_from_its_resource_version(kubesim: Any) -> None:
    kubesim.api.bookmark_interval = 3600.0  # the server says nothing while nothing changes
    client = await create_client(kubeconfig=kubesim.kubeconfig, qps=0)
    factory = InformerFactory(
        client, deadline=ReadDeadline(idle_timeout=0.3, margin=0.0), backoff=Backoff(initial=5.0)
    )
    informer = factory.informer(CONFIGMAPS, namespace=NS)
    try:
        await client.create(CONFIGMAPS, configmap("before"))
        with structlog.testing.capture_logs() as logs:
            factory.start()
            assert await informer.wait_for_cache_sync(10)
            reflector = informer.reflector
            await wait_for(lambda: reflector.watches >= 3, timeout=5, message="silent watches re-opened")
            await client.create(CONFIGMAPS, configmap("after"))
            await wait_for(lambda: informer.indexer.get(NS, "after"), timeout=5, message="still watching")
        assert reflector.lists == 1  # resumed from the last resourceVersion each time: no relist
        silent = [e for e in logs if e["event"] == "list/watch failed"]
        assert silent and all(e["error"].startswith("SilentWatchError: nothing received") for e in silent)
        assert informer.health() is None  # each re-watch that opens is a success again
    finally:
        await factory.shutdown()
        await client.close()


async def test_a_watch_whose_answer_never_comes_is_abandoned(kubesim: Any) -> None:
    client = await create_client(kubeconfig=kubesim.kubeconfig, qps=0)
    factory = InformerFactory(client, deadline=ReadDeadline(idle_timeout=0.3, margin=0.0))
    informer = factory.informer(CONFIGMAPS, namespace=NS)
    try:
        factory.start()
        assert await informer.wait_for_cache_sync(10)
        reflector = informer.reflector
        # From now on a watch is accepted but answered only after an hour: a frozen server, seen from here.
        kubesim.faults.add_latency(3600, verb="watch", resource="configmaps")
        kubesim.faults.close_watches()
        await wait_for(lambda: reflector.failing_since is not None, timeout=5, message="the watch failing")
        assert not reflector.watching and "SilentWatchError" in (reflector.last_error or "")
        kubesim.faults.clear()
        await wait_for(lambda: reflector.watching, timeout=5, message="watching again")
        await client.create(CONFIGMAPS, configmap("later"))
        await wait_for(lambda: informer.indexer.get(NS, "later"), timeout=5, message="events again")
        assert reflector.lists == 1
    finally:
        await factory.shutdown()
        await client.close()
