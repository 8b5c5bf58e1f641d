"""A patched document is decoded into the endpoint's type, as kube-apiserver decodes it: a JSON patch that
removes apiVersion or kind stores the object with them all the same, one that names another kind is a 400."""

from __future__ import annotations

import pytest

from kubesim import KubeSim
from kubesim.pytest_plugin import KubeSimFactory
from tests.kubesim_api import Api

CMS = "/api/v1/namespaces/default/configmaps"
JSON_PATCH = "application/json-patch+json"


@pytest.fixture
async def sim(kubesim_factory: KubeSimFactory) -> KubeSim:
    return await kubesim_factory(kubelet=False)


async def test_a_patch_removing_kind_or_api_version_keeps_the_type(api: Api) -> None:
    await api.ok("POST", CMS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
    ops = [{"op": "remove", "path": "/kind"}, {"op": "remove", "path": "/apiVersion"}]
    patched = await api.ok("PATCH", f"{CMS}/c", ops, JSON_PATCH)
    assert (patched["apiVersion"], patched["kind"]) == ("v1", "ConfigMap")
    stored = await api.ok("GET", f"{CMS}/c")
    assert (stored["apiVersion"], stored["kind"]) == ("v1", "ConfigMap")
    listed = await api.ok("GET", CMS)
    assert [item["metadata"]["name"] for item in listed["items"]] == ["c"]


async def test_a_patch_changing_the_kind_is_refused(api: Api) -> None:
    await api.ok("POST", CMS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
    ops = [{"op": "replace", "path": "/kind", "value": "Secret"}]
    status, payload = await api.call("PATCH", f"{CMS}/c", ops, JSON_PATCH)
    assert status == 400 and payload["kind"] == "Status" and "expected kind 'ConfigMap'" in payload["message"]
    assert (await api.ok("GET", f"{CMS}/c"))["kind"] == "ConfigMap"
