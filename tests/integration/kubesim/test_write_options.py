"""A write's options with and without a query string (the query-less path skips the look-ups): the field
manager from fieldManager, else the User-Agent's product, else "unknown"; fieldValidation Warn by default,
Strict on request; dryRun=All stores nothing."""

from __future__ import annotations

from typing import Any

import aiohttp
import orjson
import pytest

from kubesim import KubeSim
from kubesim.pytest_plugin import KubeSimFactory

CMS = "/api/v1/namespaces/default/configmaps"


@pytest.fixture
async def sim(kubesim_factory: KubeSimFactory) -> KubeSim:
    return await kubesim_factory(kubelet=False)


async def post(
    session: aiohttp.ClientSession, url: str, name: str, headers: dict[str, str] | None = None, **extra: Any
) -> tuple[int, Any, list[str]]:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}, **extra}
    sent = {"Content-Type": "application/json", **(headers or {})}
    async with session.post(url, data=orjson.dumps(body), headers=sent) as response:
        return response.status, orjson.loads(await response.read()), response.headers.getall("Warning", [])


async def test_write_options_with_and_without_a_query(sim: KubeSim) -> None:
    url = sim.url + CMS
    async with aiohttp.ClientSession(skip_auto_headers=["User-Agent"]) as session:
        status, obj, _ = await post(session, url, "agent", {"User-Agent": "tool/1.2 (linux)"})
        assert status == 201 and obj["metadata"]["managedFields"][0]["manager"] == "tool"
        status, obj, _ = await post(session, url, "anonymous-agent")
        assert status == 201 and obj["metadata"]["managedFields"][0]["manager"] == "unknown"
        status, obj, _ = await post(session, url + "?fieldManager=me", "named", {"User-Agent": "tool/1.2"})
        assert status == 201 and obj["metadata"]["managedFields"][0]["manager"] == "me"
        status, obj, warnings = await post(session, url, "warned", bogus=1)
        assert status == 201 and warnings == ['299 - "unknown field \\"bogus\\""'] and "bogus" not in obj
        status, obj, _ = await post(session, url + "?fieldValidation=Strict", "strict", bogus=1)
        assert status == 400 and 'unknown field "bogus"' in obj["message"]
        status, obj, _ = await post(session, url + "?dryRun=All", "dry")
        assert status == 201
        async with session.get(f"{url}/dry") as response:
            assert response.status == 404
