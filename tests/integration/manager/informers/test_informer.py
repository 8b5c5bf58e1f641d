"""Shared informers and the factory against kubesim over HTTP."""

from __future__ import annotations

import asyncio
import functools
from typing import Any

import pytest

from manager.apimachinery.resources import CONFIGMAPS, PODS, GroupVersionResource
from manager.client import ApiClient, create_client
from manager.informers import (
    CONTROLLER_UID_INDEX,
    Backoff,
    EventHandlerFuncs,
    InformerFactory,
    controller_uid_index,
    strip_managed_fields,
)
from tests.helpers import wait_for

NS = "default"


def pod(name: str, owner_uid: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": NS, "labels": {"app": "web"}}
    if owner_uid:
        meta["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": "rs",
                "uid": owner_uid,
                "controller": True,
            }
        ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }


class Names:
    def __init__(self) -> None:
        self.added: list[tuple[str, bool]] = []
        self.updated: list[str] = []
        self.deleted: list[str] = []

    def on_add(self, obj: dict[str, Any], is_in_initial_list: bool) -> None:
        self.added.append((obj["metadata"]["name"], is_in_initial_list))

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.updated.append(new["metadata"]["name"])

    def on_delete(self, obj: Any) -> None:
        self.deleted.append(obj["metadata"]["name"] if isinstance(obj, dict) else obj.key)


@pytest.fixture
async def client(kubesim: Any) -> Any:
    api = await create_client(kubeconfig=kubesim.kubeconfig, qps=0)
    yield api
    await api.close()


@pytest.fixture
async def factory(client: ApiClient) -> Any:
    informers = InformerFactory(client)
    yield informers
    await informers.shutdown()


async def test_factory_shares_informers_and_syncs(client: ApiClient, factory: InformerFactory) -> None:
    for i in range(3):
        await client.create(CONFIGMAPS, {"metadata": {"name": f"c{i}", "namespace": NS}})
    first = factory.informer(CONFIGMAPS)
    assert factory.informer(CONFIGMAPS) is first
    assert factory.informer(CONFIGMAPS, namespace=NS) is not first
    assert factory.informer(CONFIGMAPS, label_selector="a=b") is not first
    assert factory.readiness_check() is not None  # nothing synced yet
    factory.start()
    factory.start()  # idempotent
    assert await factory.wait_for_cache_sync(10)
    assert factory.readiness_check() is None
    assert sorted(k for k in first.indexer.list_keys() if k.startswith(f"{NS}/c")) == [
        f"{NS}/c{i}" for i in range(3)
    ]
    assert factory.informer(CONFIGMAPS, label_selector="a=b").indexer.list() == []
    # an informer requested after start starts on its own
    late = factory.informer(PODS, namespace=NS)
    assert await late.wait_for_cache_sync(10)


async def test_streaming_list_and_fallback_to_list(client: ApiClient, kubesim: Any) -> None:
    await client.create(CONFIGMAPS, {"metadata": {"name": "s", "namespace": NS}})
    streaming = InformerFactory(client, use_watch_list=True)
    try:
        informer = streaming.informer(CONFIGMAPS, namespace=NS)
        streaming.start()
        assert await informer.wait_for_cache_sync(10)
        assert informer.indexer.list_keys() == [f"{NS}/s"]
        assert informer.reflector.lists == 1 and informer.reflector.watches == 1  # one stream did both

        kubesim.faults.fail(500, verb="watch", resource="configmaps", count=1)
        fallback = streaming.informer(CONFIGMAPS, namespace=NS, label_selector="x!=y")
        assert await fallback.wait_for_cache_sync(10)
        assert fallback.indexer.list_keys() == [f"{NS}/s"]
        await client.create(CONFIGMAPS, {"metadata": {"name": "t", "namespace": NS}})
        await wait_for(lambda: len(fallback.indexer) == 2 and len(informer.indexer) == 2)
    finally:
        await streaming.shutdown()


async def test_late_handler_gets_cache_then_events(client: ApiClient, factory: InformerFactory) -> None:
    for i in range(4):
        await client.create(CONFIGMAPS, {"metadata": {"name": f"l{i}", "namespace": NS}})
    informer = factory.informer(CONFIGMAPS, namespace=NS)
    early = Names()
    early_reg = informer.add_event_handler(early)
    factory.start()
    assert await factory.wait_for_cache_sync(10)
    await wait_for(early_reg.has_synced)
    assert sorted(early.added) == [(f"l{i}", True) for i in range(4)]

    late = Names()
    late_reg = informer.add_event_handler(late)
    await wait_for(late_reg.has_synced)
    assert sorted(late.added) == [(f"l{i}", True) for i in range(4)]
    await client.create(CONFIGMAPS, {"metadata": {"name": "l9", "namespace": NS}})
    await client.delete(CONFIGMAPS, "l0", NS)

    def settled(names: Names) -> bool:
        return ("l9", False) in names.added and names.deleted == ["l0"]

    for names in (early, late):
        await wait_for(functools.partial(settled, names))


async def test_slow_handler_does_not_delay_another(client: ApiClient, factory: InformerFactory) -> None:
    informer = factory.informer(CONFIGMAPS, namespace=NS)
    gate = asyncio.Event()
    slow_seen: list[str] = []

    async def slow(obj: dict[str, Any], initial: bool) -> None:
        await gate.wait()
        slow_seen.append(obj["metadata"]["name"])

    informer.add_event_handler(EventHandlerFuncs(add=slow))
    fast = Names()
    informer.add_event_handler(fast)
    factory.start()
    assert await factory.wait_for_cache_sync(10)
    for i in range(30):
        await client.create(CONFIGMAPS, {"metadata": {"name": f"s{i:02d}", "namespace": NS}})
    await wait_for(lambda: len(fast.added) == 30)
    assert slow_seen == []
    gate.set()
    await wait_for(lambda: len(slow_seen) == 30)
    assert slow_seen == [f"s{i:02d}" for i in range(30)]  # per-handler order is kept


async def test_metadata_only_informer_and_owner_index(client: ApiClient, factory: InformerFactory) -> None:
    for i in range(3):
        await client.create(PODS, pod(f"p{i}", owner_uid="rs-uid-1" if i < 2 else None))
    informer = factory.informer(PODS, namespace=NS, metadata_only=True)
    informer.add_indexers({CONTROLLER_UID_INDEX: controller_uid_index})
    factory.start()
    assert await informer.wait_for_cache_sync(10)
    cached = informer.indexer.get(NS, "p0")
    assert cached is not None
    assert cached["kind"] == "PartialObjectMetadata" and cached["apiVersion"] == "meta.k8s.io/v1"
    assert set(cached) == {"apiVersion", "kind", "metadata"} and "managedFields" not in cached["metadata"]
    owned = informer.indexer.by_index(CONTROLLER_UID_INDEX, "rs-uid-1")
    assert sorted(o["metadata"]["name"] for o in owned) == ["p0", "p1"]
    # watch events arrive as metadata too (the kubelet updates pod status meanwhile)
    await client.patch(PODS, "p2", {"metadata": {"labels": {"x": "y"}}}, NS)
    await wait_for(
        lambda: (informer.indexer.get(NS, "p2") or {}).get("metadata", {}).get("labels", {}).get("x") == "y"
    )
    assert set(informer.indexer.get(NS, "p2") or {}) == {"apiVersion", "kind", "metadata"}


async def test_unreachable_api_server_backs_off_and_fails_readiness() -> None:
    from manager.client.config import RestConfig

    client = ApiClient(RestConfig(host="http://127.0.0.1:9"), max_retries=0)
    factory = InformerFactory(client, backoff=None, failure_grace=0.0)
    try:
        informer = factory.informer(CONFIGMAPS)
        informer.reflector.backoff = Backoff(initial=0.01, maximum=0.05)
        factory.start()
        await wait_for(lambda: informer.reflector.last_error is not None)
        assert not await factory.wait_for_cache_sync(0.2)
        reason = factory.readiness_check()
        assert reason is not None and "not synced" in reason and "Connect" in reason
        assert informer._task is not None and not informer._task.done()  # still trying
    finally:
        await factory.shutdown()
        await client.close()


async def test_cancelled_cache_sync_wait_reports_nothing() -> None:
    """Shutdown during start-up cancels `wait_for_cache_sync`: no 'exception was never retrieved' after."""
    import gc

    from manager.client.config import RestConfig

    client = ApiClient(RestConfig(host="http://127.0.0.1:9"), max_retries=0)
    factory = InformerFactory(client)
    informers = [factory.informer(CONFIGMAPS), factory.informer(PODS)]
    loop = asyncio.get_running_loop()
    reported: list[dict[str, Any]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: reported.append(context))
    try:
        factory.start()
        waiter = asyncio.create_task(factory.wait_for_cache_sync(30))
        await wait_for(lambda: any(i._synced_event._waiters for i in informers))
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        await factory.shutdown()
        del waiter
        gc.collect()
        await asyncio.sleep(0)
        assert [c.get("message") for c in reported] == []
    finally:
        loop.set_exception_handler(previous)
        await factory.shutdown()
        await client.close()


async def test_per_informer_transform_is_part_of_the_identity(
    client: ApiClient, factory: InformerFactory
) -> None:
    def without_spec(obj: dict[str, Any]) -> dict[str, Any]:
        obj.pop("spec", None)
        return strip_managed_fields(obj)

    def labels_only(obj: dict[str, Any]) -> dict[str, Any]:
        obj["metadata"] = {k: obj["metadata"][k] for k in ("name", "namespace", "labels")}
        return obj

    await client.create(PODS, pod("t1"))
    plain = factory.informer(PODS, namespace=NS)
    slim = factory.informer(PODS, namespace=NS, transform=without_spec)
    assert factory.informer(PODS, namespace=NS, transform=without_spec) is slim
    assert slim is not plain and slim.name != plain.name and "transform=" in slim.name
    meta_only = factory.informer(PODS, namespace=NS, metadata_only=True, transform=labels_only)
    factory.start()
    assert await factory.wait_for_cache_sync(10)
    key = f"{NS}/t1"
    cached, slim_cached, meta_cached = (i.indexer.get_by_key(key) for i in (plain, slim, meta_only))
    assert cached is not None and "spec" in cached and "managedFields" not in cached["metadata"]
    assert slim_cached is not None and "spec" not in slim_cached
    assert slim_cached["metadata"]["name"] == "t1" and "managedFields" not in slim_cached["metadata"]
    assert meta_cached == {
        "apiVersion": "meta.k8s.io/v1",
        "kind": "PartialObjectMetadata",
        "metadata": {"name": "t1", "namespace": NS, "labels": {"app": "web"}},
    }


async def test_monitor_reuses_the_process_informer_and_is_left_out_of_readiness(
    client: ApiClient, kubesim: Any
) -> None:
    factory = InformerFactory(client, backoff=Backoff(initial=0.05, maximum=0.2))
    try:
        pods = factory.informer(PODS)  # another controller's full informer
        assert factory.monitor(PODS) is pods
        configmaps = factory.monitor(CONFIGMAPS)
        assert configmaps is not factory.informer(CONFIGMAPS) and configmaps.metadata_only
        assert factory.monitor(CONFIGMAPS) is configmaps
        missing = factory.monitor(GroupVersionResource("example.aiokcm.io", "v1", "nothings", "Nothing"))
        factory.start()
        assert await pods.wait_for_cache_sync(10) and await configmaps.wait_for_cache_sync(10)
        await factory.informer(CONFIGMAPS).wait_for_cache_sync(10)
        assert factory.readiness_check() is None  # the failing monitor does not count
        assert not missing.has_synced()

        registration = configmaps.add_event_handler(EventHandlerFuncs())
        assert not await factory.discard(configmaps)  # still has a handler
        await configmaps.remove_event_handler(registration)
        assert await factory.discard(configmaps)
        assert not await factory.discard(pods)  # not a monitor: somebody asked for it
        assert await factory.discard(missing)
        assert factory.monitor(CONFIGMAPS) is not configmaps  # a fresh one if asked again
    finally:
        await factory.shutdown()
