"""The informer's LIST is decoded without the items' managedFields (manager.client.managedfields_list):
what it caches is the listed object minus managedFields, every other field intact, against kubesim."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from manager.apimachinery.resources import CONFIGMAPS
from manager.client import ApiClient, create_client
from manager.client.managedfields_list import cut_list_managed_fields, decode_list_stripped
from manager.informers import InformerFactory, SharedInformer

NS = "default"
TRICKY = {
    "plain": {"a": "b"},
    "pattern in data": {"x": '{"managedFields":[{"manager":"m"}]}', "managedFields": "[]"},
    "escaped quotes": {"y": 'a\\"managedFields\\":[{"}]'},
    "unicode": {"z": "\u00e9\u2603\U0001f600"},
}


@pytest.fixture
async def client(kubesim: Any) -> Any:
    api = await create_client(kubeconfig=kubesim.kubeconfig, qps=0)
    yield api
    await api.close()


async def create_configmaps(client: ApiClient) -> None:
    for i, (name, data) in enumerate(TRICKY.items()):
        annotations = {"note": '"managedFields":[1]', "n": str(i)}
        body = {"metadata": {"name": name.replace(" ", "-"), "namespace": NS, "annotations": annotations}}
        await client.create(CONFIGMAPS, {**body, "data": data})


async def synced(factory: InformerFactory, informer: SharedInformer) -> dict[str, Any]:
    factory.start()
    assert await factory.wait_for_cache_sync(10)
    return {obj["metadata"]["name"]: obj for obj in informer.indexer.list()}


async def test_listed_objects_are_cached_without_managed_fields_otherwise_intact(client: ApiClient) -> None:
    await create_configmaps(client)
    raw = await client.list_raw(CONFIGMAPS, NS)
    listed = orjson.loads(raw)["items"]
    assert len(listed) == len(TRICKY) and all(item["metadata"]["managedFields"] for item in listed)
    cut = cut_list_managed_fields(raw)
    assert cut is not None and cut[1] == len(TRICKY)  # kubesim's bytes take the cut, one per item
    assert decode_list_stripped(raw)["items"] == [
        {**item, "metadata": {k: v for k, v in item["metadata"].items() if k != "managedFields"}}
        for item in listed
    ]

    factory = InformerFactory(client)
    try:
        informer = factory.informer(CONFIGMAPS, namespace=NS)
        assert informer.reflector.pager.decode is decode_list_stripped
        cached = await synced(factory, informer)
        assert informer.reflector.lists == 1 and informer.reflector.watches <= 1  # from the LIST
    finally:
        await factory.shutdown()
    for item in listed:
        name = item["metadata"]["name"]
        assert "managedFields" not in cached[name]["metadata"]
        item["metadata"].pop("managedFields")
        assert cached[name] == item


async def test_a_transform_that_keeps_managed_fields_lists_them_whole(client: ApiClient) -> None:
    await create_configmaps(client)

    def keep(obj: dict[str, Any]) -> dict[str, Any]:
        return obj

    factory = InformerFactory(client)
    try:
        informer = factory.informer(CONFIGMAPS, namespace=NS, transform=keep)
        assert informer.reflector.pager.decode is orjson.loads
        cached = await synced(factory, informer)
    finally:
        await factory.shutdown()
    assert len(cached) == len(TRICKY)
    assert all(obj["metadata"]["managedFields"][0]["manager"] for obj in cached.values())
