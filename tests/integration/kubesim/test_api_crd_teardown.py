"""Deleting a CRD over real HTTP: its custom resources are deleted first (a DELETED event each on an open
watch), then the watch ends, as the API server tears the resource's storage down, and a list is a 404."""

from __future__ import annotations

import asyncio

import orjson
import pytest

from kubesim import KubeSim
from kubesim.pytest_plugin import KubeSimFactory
from tests.helpers import schemaless_crd, wait_for
from tests.kubesim_api import Api

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
WIDGETS = "/apis/example.aiokcm.io/v1/namespaces/default/widgets"


@pytest.fixture
async def sim(kubesim_factory: KubeSimFactory) -> KubeSim:
    return await kubesim_factory(kubelet=False)


async def test_a_watch_on_a_custom_resource_ends_when_its_crd_is_deleted(api: Api) -> None:
    await api.ok("POST", CRDS, schemaless_crd("example.aiokcm.io", "Widget"))
    await wait_for(lambda: _served(api), message="the CRD to be served")
    for name in ("a", "b"):
        await api.ok(
            "POST",
            WIDGETS,
            {"apiVersion": "example.aiokcm.io/v1", "kind": "Widget", "metadata": {"name": name}},
        )
    listed = await api.ok("GET", WIDGETS)
    rv = listed["metadata"]["resourceVersion"]

    async with api.session.get(f"{api.url}{WIDGETS}?watch=1&resourceVersion={rv}") as response:
        assert response.status == 200
        await api.ok("DELETE", f"{CRDS}/widgets.example.aiokcm.io")
        async with asyncio.timeout(15):
            lines = [orjson.loads(line) async for line in response.content if line.strip()]
    # The stream ended by itself (no timeoutSeconds asked), after one DELETED event per custom resource.
    assert sorted((e["type"], e["object"]["metadata"]["name"]) for e in lines) == [
        ("DELETED", "a"),
        ("DELETED", "b"),
    ]
    status, body = await api.call("GET", WIDGETS)
    assert status == 404, body
    assert body["kind"] == "Status"


async def _served(api: Api) -> bool:
    status, _ = await api.call("GET", WIDGETS)
    return status == 200
