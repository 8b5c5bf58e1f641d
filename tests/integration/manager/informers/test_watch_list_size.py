"""A streaming list with more initial events than kubesim's slow-watcher limit syncs once and stays open:
the initial events do not count toward the limit, so the reflector does not relist in a loop (it did at
100,000 pods, the limit then, in benchmarks/scale.py)."""

from __future__ import annotations

from typing import Any

from kubesim.pytest_plugin import KubeSimFactory
from manager.apimachinery.resources import CONFIGMAPS
from manager.client import create_client
from manager.informers import Backoff, InformerFactory
from manager.informers.watchlist import watch_list_supported
from tests.helpers import wait_for

LIMIT = 20
COUNT = 5 * LIMIT


async def test_a_streaming_list_above_the_limit_syncs_once_and_keeps_its_watch(
    kubesim_factory: KubeSimFactory,
) -> None:
    sim = await kubesim_factory(kubelet=False)
    sim.watches.max_buffered = LIMIT
    for i in range(COUNT):
        sim.store.create("configmaps", {"metadata": {"name": f"cm{i}", "namespace": "default"}})
    client = await create_client(kubeconfig=sim.kubeconfig, qps=0)
    factory = InformerFactory(client, use_watch_list=True, backoff=Backoff(initial=0.05, maximum=0.2))
    try:
        informer = factory.informer(CONFIGMAPS, namespace="default")
        factory.start()
        assert await factory.wait_for_cache_sync(10)
        assert len(informer.indexer.list()) == COUNT
        await client.create(CONFIGMAPS, {"metadata": {"name": "live", "namespace": "default"}})

        def seen() -> Any:
            return informer.indexer.get_by_key("default/live")

        await wait_for(seen, 10, message="the live object in the cache")
        reflector = informer.reflector
        # One streaming list (not the fallback to a plain list), its stream still the one open: never
        # dropped, never relisted.
        assert watch_list_supported(client)
        assert (reflector.lists, reflector.watches, reflector.last_error) == (1, 1, None)
        assert reflector.watching
    finally:
        await factory.shutdown()
        await client.close()
