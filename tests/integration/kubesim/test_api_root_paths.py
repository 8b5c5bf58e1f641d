"""Root paths with and without a trailing slash, as kube-apiserver's mux answers them: go-restful web services
(/version, /api) and the /apis discovery handler take both spellings; /healthz, /livez, /readyz and
/openapi/v2 are exact paths, so a trailing slash is a 404."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from kubernetes import client, config

from kubesim import KubeSim
from kubesim.pytest_plugin import KubeSimFactory
from tests.kubesim_api import Api


@pytest.fixture
async def sim(kubesim_factory: KubeSimFactory) -> KubeSim:
    return await kubesim_factory(kubelet=False)


async def test_official_client_version_api(sim: KubeSim) -> None:
    api_client: Any = await asyncio.to_thread(config.new_client_from_config, config_file=sim.kubeconfig)
    try:
        info = await asyncio.to_thread(client.VersionApi(api_client).get_code)  # GET /version/
    finally:
        await asyncio.to_thread(api_client.close)
    assert info.major == "1" and info.git_version.startswith("v1.")


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/version", 200),
        ("/version/", 200),
        ("/api", 200),
        ("/api/", 200),
        ("/apis", 200),
        ("/apis/", 200),
        ("/healthz", 200),
        ("/healthz/", 404),
        ("/livez/", 404),
        ("/readyz/", 404),
        ("/openapi/v2/", 404),
    ],
)
async def test_trailing_slash(api: Api, path: str, status: int) -> None:
    async with api.session.get(api.url + path) as resp:  # raw: /healthz answers plain text
        assert resp.status == status, path
