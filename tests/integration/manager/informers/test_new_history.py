"""An API server that comes back with a new history (kubesim restarted with an empty store on the same port,
its resourceVersions starting again from a low number): the informer relists, ends with exactly the new
server's objects, and logs the resourceVersion going backwards."""

from __future__ import annotations

from typing import Any

import pytest
import structlog

from kubesim import KubeSim
from manager.apimachinery.resources import CONFIGMAPS
from manager.client import create_client
from manager.informers import Backoff, InformerFactory, SharedInformer
from tests.helpers import wait_for

NS = "default"


def uid_of(informer: SharedInformer[Any], name: str) -> str | None:
    obj = informer.indexer.get(NS, name)
    return None if obj is None else str(obj["metadata"]["uid"])


def configmap(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": NS}, "data": {}}


@pytest.mark.parametrize("use_watch_list", [False, True], ids=["list", "watchlist"])
async def test_restarted_server_with_a_new_history_replaces_the_cache(use_watch_list: bool) -> None:
    old = await KubeSim(kubelet=False).start()
    port = old.port
    client = await create_client(kubeconfig=old.kubeconfig, qps=0, max_retries=1, max_retry_after=0.05)
    factory = InformerFactory(
        client, backoff=Backoff(initial=0.05, maximum=0.2), use_watch_list=use_watch_list
    )
    informer = factory.informer(CONFIGMAPS, namespace=NS)
    restarts: list[int] = []
    informer.add_history_listener(lambda: restarts.append(len(informer.indexer)))
    new: KubeSim | None = None
    try:
        for index in range(20):
            await client.create(CONFIGMAPS, configmap(f"old-{index}"))
        factory.start()
        assert await informer.wait_for_cache_sync(10)
        await wait_for(lambda: len(informer.indexer) == 20, timeout=10, message="the old objects cached")
        old_rv = int(informer.reflector.last_sync_resource_version)
        with structlog.testing.capture_logs() as logs:
            await old.stop()
            new = KubeSim(port=port, kubelet=False)
            await new.start()
            new.api.too_new_wait = 0.2
            await client.create(CONFIGMAPS, configmap("fresh"))
            assert new.store.resource_version < old_rv
            await wait_for(
                lambda: set(informer.indexer.list_keys()) == {f"{NS}/fresh"},
                timeout=10,
                message="the cache equal to the new server",
            )
        backwards = [e for e in logs if e["event"].startswith("resourceVersion went backwards")]
        assert backwards and backwards[0]["log_level"] == "error"
        assert restarts and restarts[0] <= 1  # told after the cache was replaced, not before
        assert backwards[0]["last_synced_resource_version"] == str(old_rv)
        assert int(backwards[0]["server_resource_version"]) < old_rv
    finally:
        await factory.shutdown()
        await client.close()
        if new is not None:
            await new.stop()


async def test_a_bookmark_below_the_synced_resource_version_relists(kubesim: Any) -> None:
    # The watch is reopened (not refused) at a resourceVersion the server has not reached, as after a restore
    # while connected through a proxy: only the server's bookmarks tell that its history is behind ours.
    kubesim.api.bookmark_interval = 0.1
    client = await create_client(kubeconfig=kubesim.kubeconfig, qps=0, max_retries=1, max_retry_after=0.05)
    factory = InformerFactory(client, backoff=Backoff(initial=0.05, maximum=0.2))
    informer = factory.informer(CONFIGMAPS, namespace=NS)
    try:
        await client.create(CONFIGMAPS, configmap("a"))
        factory.start()
        assert await informer.wait_for_cache_sync(10)
        lists = informer.reflector.lists
        future = str(kubesim.store.resource_version + 1000)
        with structlog.testing.capture_logs() as logs:
            informer.reflector.last_sync_resource_version = future
            kubesim.faults.close_watches()
            await wait_for(lambda: informer.reflector.lists > lists, timeout=10, message="a relist")
            await client.create(CONFIGMAPS, configmap("b"))
            await wait_for(lambda: len(informer.indexer) == 2, timeout=10, message="watching again")
        backwards = [e for e in logs if e["event"].startswith("resourceVersion went backwards")]
        assert backwards[0]["seen_in"] == "watch" and backwards[0]["last_synced_resource_version"] == future
    finally:
        await factory.shutdown()
        await client.close()


async def test_a_known_key_with_another_uid_and_a_lower_resource_version_is_a_new_history() -> None:
    # The new server has passed the old resourceVersion, so only the identity of "a" shows the restart.
    old = await KubeSim(kubelet=False).start()
    client = await create_client(kubeconfig=old.kubeconfig, qps=0, max_retries=1, max_retry_after=0.05)
    factory = InformerFactory(client, backoff=Backoff(initial=0.05, maximum=0.2))
    informer = factory.informer(CONFIGMAPS, namespace=NS)
    new: KubeSim | None = None
    try:
        for index in range(5):
            await client.create(CONFIGMAPS, configmap(f"old-{index}"))
        first = await client.create(CONFIGMAPS, configmap("a"))
        factory.start()
        assert await informer.wait_for_cache_sync(10)
        with structlog.testing.capture_logs() as logs:
            await old.stop()
            new = await KubeSim(port=old.port, kubelet=False).start()
            second = await client.create(CONFIGMAPS, configmap("a"))
            for index in range(20):
                await client.create(CONFIGMAPS, configmap(f"new-{index}"))
            assert new.store.resource_version > int(first["metadata"]["resourceVersion"])
            await wait_for(
                lambda: len(informer.indexer) == 21 and uid_of(informer, "a") == second["metadata"]["uid"],
                timeout=10,
                message="the cache equal to the new server",
            )
        backwards = [e for e in logs if e["event"].startswith("resourceVersion went backwards")]
        assert backwards[0]["seen_in"] == f"list: {NS}/a has another uid"
        assert backwards[0]["last_synced_resource_version"] == first["metadata"]["resourceVersion"]
        assert backwards[0]["server_resource_version"] == second["metadata"]["resourceVersion"]
    finally:
        await factory.shutdown()
        await client.close()
        if new is not None:
            await new.stop()
