"""Deleting objects that finalizers hold, over real HTTP: DELETE preconditions (in a query-less JSON body, as
kubectl and the official client send them), releasing the last finalizer by PATCH or PUT removing the object
with a DELETED watch event, and repeated deletes never moving the deletionTimestamp."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import orjson
import pytest
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from kubesim import KubeSim
from kubesim.pytest_plugin import KubeSimFactory
from tests.kubesim_api import Api

Obj = dict[str, Any]
CMS = "/api/v1/namespaces/default/configmaps"
HOLD = "example.com/hold"


@pytest.fixture
async def sim(kubesim_factory: KubeSimFactory) -> KubeSim:
    return await kubesim_factory(kubelet=False)


def held(name: str) -> Obj:
    return {"metadata": {"name": name, "finalizers": [HOLD]}, "data": {"k": "v"}}


async def test_preconditions_in_the_body_conflict_on_mismatch(api: Api) -> None:
    created = await api.ok("POST", CMS, held("p"))
    meta = created["metadata"]
    status, payload = await api.call("DELETE", f"{CMS}/p", {"preconditions": {"uid": "not-the-uid"}})
    assert status == 409 and payload["reason"] == "Conflict"
    assert payload["message"] == (
        f'Operation cannot be fulfilled on ConfigMap "p": the UID in the precondition (not-the-uid) does not '
        f"match the UID in record ({meta['uid']}). The object might have been deleted and then recreated"
    )
    assert payload["details"] == {"name": "p", "kind": "ConfigMap"}
    options = {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"resourceVersion": "1"}}
    status, payload = await api.call("DELETE", f"{CMS}/p", options)
    assert status == 409 and payload["message"].endswith(
        f"the ResourceVersion in the precondition (1) does not match the ResourceVersion in record "
        f"({meta['resourceVersion']}). The object might have been modified"
    )
    assert (await api.ok("GET", f"{CMS}/p"))["metadata"].get("deletionTimestamp") is None  # nothing done
    right = {"preconditions": {"uid": meta["uid"], "resourceVersion": meta["resourceVersion"]}}
    assert (await api.ok("DELETE", f"{CMS}/p", right))["metadata"]["deletionTimestamp"]
    status, _ = await api.call("DELETE", f"{CMS}/p", right)  # the marking changed the resourceVersion
    assert status == 409


async def test_namespace_preconditions_keep_their_own_wording(api: Api) -> None:
    await api.ok("POST", "/api/v1/namespaces", {"metadata": {"name": "pre"}})
    status, payload = await api.call("DELETE", "/api/v1/namespaces/pre", {"preconditions": {"uid": "u"}})
    assert (
        status == 409
        and "Precondition failed: UID in precondition: u, UID in object meta:" in (payload["message"])
    )


async def test_official_client_preconditions(sim: KubeSim) -> None:
    api_client = await asyncio.to_thread(config.new_client_from_config, config_file=sim.kubeconfig)
    try:
        core = client.CoreV1Api(api_client)
        body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="c"), data={"k": "v"})
        created = await asyncio.to_thread(core.create_namespaced_config_map, "default", body)
        assert created.metadata is not None
        stale = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="recreated"))
        with pytest.raises(ApiException) as err:
            await asyncio.to_thread(core.delete_namespaced_config_map, "c", "default", body=stale)
        assert err.value.status == 409 and "the UID in the precondition (recreated)" in str(err.value.body)
        fresh = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid=created.metadata.uid))
        result: Any = await asyncio.to_thread(core.delete_namespaced_config_map, "c", "default", body=fresh)
        assert result["status"] == "Success"  # a Status, handed back as a dict
    finally:
        await asyncio.to_thread(api_client.close)


async def next_event(resp: aiohttp.ClientResponse, wanted: str) -> Obj:
    """Read watch lines until one of type `wanted` (no sleeping: each read waits for the server)."""
    async with asyncio.timeout(5):
        while line := await resp.content.readline():
            event: Obj = orjson.loads(line)
            if event["type"] == wanted:
                return event
    raise AssertionError(f"the watch ended before a {wanted} event")


@pytest.mark.parametrize("how", ["merge-patch", "json-patch", "put"])
async def test_releasing_the_last_finalizer_removes_the_object(api: Api, sim: KubeSim, how: str) -> None:
    await api.ok("POST", CMS, held("f"))
    deleting = await api.ok("DELETE", f"{CMS}/f?propagationPolicy=Orphan")
    assert deleting["metadata"]["finalizers"] == [HOLD, "orphan"]
    rv = deleting["metadata"]["resourceVersion"]
    url = f"{sim.url}{CMS}?watch=true&resourceVersion={rv}&timeoutSeconds=10"
    async with api.session.get(url) as watch:
        if how == "merge-patch":
            body: Any = {"metadata": {"finalizers": None}}
            await api.ok("PATCH", f"{CMS}/f", body, "application/merge-patch+json")
        elif how == "json-patch":
            await api.ok(
                "PATCH",
                f"{CMS}/f",
                [{"op": "remove", "path": "/metadata/finalizers"}],
                "application/json-patch+json",
            )
        else:
            current = await api.ok("GET", f"{CMS}/f")
            current["metadata"]["finalizers"] = []
            await api.ok("PUT", f"{CMS}/f", current)
        event = await next_event(watch, "DELETED")
    gone = event["object"]["metadata"]
    assert gone["name"] == "f" and gone["deletionTimestamp"] == deleting["metadata"]["deletionTimestamp"]
    assert not gone.get("finalizers") and int(gone["resourceVersion"]) > int(rv)
    assert await api.gone(f"{CMS}/f")


async def test_releasing_one_of_two_finalizers_keeps_the_object(api: Api) -> None:
    await api.ok("POST", CMS, held("two"))
    await api.ok("DELETE", f"{CMS}/two?propagationPolicy=Foreground")
    patch = {"metadata": {"finalizers": ["foregroundDeletion"]}}
    still = await api.ok("PATCH", f"{CMS}/two", patch, "application/merge-patch+json")
    assert still["metadata"]["finalizers"] == ["foregroundDeletion"] and not await api.gone(f"{CMS}/two")


async def test_repeated_delete_never_moves_the_deletion_timestamp(kubesim_factory: KubeSimFactory) -> None:
    now = [1_700_000_000.0]
    sim = await kubesim_factory(kubelet=False, clock=lambda: now[0])
    async with aiohttp.ClientSession() as session:
        api = Api(session, sim.url)
        await api.ok("POST", CMS, held("t"))
        first = (await api.ok("DELETE", f"{CMS}/t"))["metadata"]
        assert first["deletionTimestamp"] == "2023-11-14T22:13:20Z"
        now[0] += 120
        for query in (
            "?propagationPolicy=Foreground",
            "?propagationPolicy=Orphan",
            "",
            "?gracePeriodSeconds=0",
        ):
            again = (await api.ok("DELETE", f"{CMS}/t{query}"))["metadata"]
            assert again["deletionTimestamp"] == first["deletionTimestamp"], query
            assert again["deletionGracePeriodSeconds"] == 0
