"""discover_resources against kubesim: the whole served tree, preferred versions and verbs."""

from __future__ import annotations

from typing import Any

import pytest

from manager import CUSTOMRESOURCEDEFINITIONS, JOBS, PODS, ApiClient, discover_resources
from manager.apimachinery.resources import GroupVersionResource
from manager.client import create_client
from tests.helpers import schemaless_crd, wait_for


@pytest.fixture
async def client(kubesim: Any) -> Any:
    api = await create_client(kubeconfig=kubesim.kubeconfig, qps=0)
    yield api
    await api.close()


def gadget_crd(versions: list[str]) -> dict[str, Any]:
    return schemaless_crd("example.aiokcm.io", "Gadget", scope="Cluster", versions=tuple(versions))


async def test_lists_every_resource_once_with_its_verbs(client: ApiClient) -> None:
    discovery = await discover_resources(client)
    assert not discovery.failed
    by_gvr = {r.gvr: r for r in discovery.resources}
    assert by_gvr[PODS].supports("list", "watch", "delete", "deletecollection")
    assert by_gvr[JOBS].supports("get", "patch")
    names = [(r.gvr.group, r.gvr.resource) for r in discovery.resources]
    assert len(names) == len(set(names))  # one version per resource
    assert not any("/" in r.gvr.resource for r in discovery.resources)  # no subresources
    deletable = {r.gvr.resource for r in discovery.with_verbs("delete", "list", "watch")}
    assert {"pods", "configmaps", "jobs", "replicasets", "namespaces"} <= deletable


async def test_a_custom_resource_appears_in_its_preferred_version(client: ApiClient) -> None:
    await client.create(CUSTOMRESOURCEDEFINITIONS, gadget_crd(["v2", "v1"]))

    async def gadgets() -> GroupVersionResource | None:
        found = await discover_resources(client)
        return next((r.gvr for r in found.resources if r.gvr.resource == "gadgets"), None)

    gvr = await wait_for(gadgets, timeout=10)
    assert gvr == GroupVersionResource("example.aiokcm.io", "v2", "gadgets", "Gadget", namespaced=False)
