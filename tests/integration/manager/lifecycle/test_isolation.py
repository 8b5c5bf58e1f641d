"""A controller whose custom resource is not served yet waits on its own, visibly, and starts by itself once
the CRD appears; every other controller runs meanwhile (kube-controller-manager's controllers each wait for
their own caches)."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest
from prometheus_client import REGISTRY

from controllers.job import JobController
from manager import (
    CONFIGMAPS,
    CUSTOMRESOURCEDEFINITIONS,
    JOBS,
    ApiClient,
    Controller,
    For,
    GroupVersionResource,
    NotFound,
    PolicyRule,
    Request,
    Result,
)
from manager.testing import run_controllers, wait_for
from tests.helpers import schemaless_crd

GADGETS: GroupVersionResource = GroupVersionResource("example.aiokcm.io", "v1", "gadgets", "Gadget")
WAITING = "aiokcm_controller_waiting_for_cache_sync"


class GadgetController(Controller):
    """Keeps a ConfigMap named after each Gadget."""

    name = "gadget-controller"
    watches = (For(GADGETS),)
    rbac = (
        PolicyRule(("example.aiokcm.io",), ("gadgets",), ("list", "watch")),
        PolicyRule(("",), ("configmaps",), ("get", "create")),
    )

    async def reconcile(self, request: Request) -> Result | None:
        if self.lister(GADGETS).get_by_key(request.key) is None:
            return None
        body = {"metadata": {"name": f"gadget-{request.name}", "namespace": request.namespace}}
        try:
            await self.client.get(CONFIGMAPS, f"gadget-{request.name}", request.namespace)
        except NotFound:
            await self.client.create(CONFIGMAPS, body)
        return None


def gadget_crd() -> dict[str, Any]:
    return schemaless_crd("example.aiokcm.io", "Gadget")


async def get(url: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        return response.status, await response.text()


async def test_a_controller_without_its_crd_waits_while_the_others_run() -> None:
    async with run_controllers(JobController, GadgetController, wait_for_sync=False) as env:
        job = {
            "metadata": {"name": "meanwhile", "namespace": "default"},
            "spec": {
                "template": {
                    "metadata": {"annotations": {"kubesim.aiokcm.io/run-seconds": "0"}},
                    "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]},
                }
            },
        }
        await env.client.create(JOBS, job, "default")

        async def job_complete() -> bool:
            status = (await env.client.get(JOBS, "meanwhile", "default")).get("status") or {}
            return status.get("succeeded") == 1

        await wait_for(job_complete, timeout=15, message="the Job to complete while the gadgets wait")
        url = env.manager.server.url

        status, body = await get(f"{url}/readyz?verbose")
        assert status == 500, body
        assert "[+]job-controller ok" in body
        assert "[-]gadget-controller failed: reason withheld" in body  # the reason goes to the logs
        debug = dict(await _debug(url))["gadget-controller"]
        assert not debug["workers_started"]
        assert debug["waiting_for_sync"].startswith("waiting for informers to sync: ")
        assert "gadgets.v1.example.aiokcm.io: not synced (NotFound" in debug["waiting_for_sync"]
        assert REGISTRY.get_sample_value(WAITING, {"controller": "gadget-controller"}) == 1

        await env.client.create(CUSTOMRESOURCEDEFINITIONS, gadget_crd())

        async def gadget_created() -> bool:
            body = {"apiVersion": "example.aiokcm.io/v1", "kind": "Gadget", "metadata": {"name": "g"}}
            try:
                await env.client.create(GADGETS, body, "default")
            except NotFound:
                return False  # the CRD is not served yet
            return True

        await wait_for(gadget_created, message="the CRD to be served")

        async def configmap_made() -> bool:
            try:
                await env.client.get(CONFIGMAPS, "gadget-g", "default")
            except NotFound:
                return False
            return True

        await wait_for(configmap_made, timeout=20, message="the gadget controller to start by itself")
        assert REGISTRY.get_sample_value(WAITING, {"controller": "gadget-controller"}) == 0
        status, body = await get(f"{url}/readyz?verbose")
        assert status == 200, body


async def _debug(url: str) -> list[tuple[str, dict[str, Any]]]:
    async with aiohttp.ClientSession() as session, session.get(f"{url}/debug/controllers") as response:
        payload = await response.json()
    controllers = payload["controllers"] if isinstance(payload, dict) else payload
    return [(c["name"], c) for c in controllers]


@pytest.mark.slow  # waits out the reflector's backoff after the 404s
async def test_a_crd_deleted_under_its_running_controller_stops_only_that_controller() -> None:
    """Deleting a CRD while its controller runs: its custom resources go, the controller's informer reports
    the missing resource and retries, every other controller goes on; the CRD back, the controller acts
    again."""
    async with run_controllers(JobController, GadgetController, wait_for_sync=False) as env:
        await env.client.create(CUSTOMRESOURCEDEFINITIONS, gadget_crd())
        await wait_for(lambda: _create_gadget(env.client, "before"), message="the CRD to be served")
        await wait_for(
            lambda: _exists(env.client, "gadget-before"), timeout=20, message="the first ConfigMap"
        )

        await env.client.delete(CUSTOMRESOURCEDEFINITIONS, "gadgets.example.aiokcm.io")

        async def crd_gone() -> bool:
            try:
                await env.client.get(CUSTOMRESOURCEDEFINITIONS, "gadgets.example.aiokcm.io")
            except NotFound:
                return True
            return False

        await wait_for(crd_gone, timeout=15, message="the CRD to be deleted")
        await env.client.create(JOBS, _job("after-crd-deletion"), "default")
        await wait_for(
            lambda: _job_succeeded(env.client, "after-crd-deletion"),
            timeout=15,
            message="the Job controller to go on without the CRD",
        )
        url = env.manager.server.url

        async def reported() -> bool:
            problem = dict(await _debug(url))["gadget-controller"]["waiting_for_sync"]
            return (
                bool(problem)
                and "resource no longer served: gadgets.v1.example.aiokcm.io (NotFound" in problem
            )

        await wait_for(reported, timeout=15, message="the missing resource in /debug/controllers")
        status, body = await get(f"{url}/readyz?verbose")
        assert status == 500, body
        assert "[+]job-controller ok" in body
        assert "[-]gadget-controller failed" in body
        status, body = await get(f"{url}/livez")
        assert status == 200, body

        await env.client.create(CUSTOMRESOURCEDEFINITIONS, gadget_crd())
        await wait_for(
            lambda: _create_gadget(env.client, "after"), timeout=15, message="the CRD served again"
        )
        await wait_for(
            lambda: _exists(env.client, "gadget-after"),
            timeout=45,
            message="the gadget controller to act again",
        )
        await wait_for(lambda: _ready(url), timeout=15, message="/readyz to pass again")


def _job(name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "template": {
                "metadata": {"annotations": {"kubesim.aiokcm.io/run-seconds": "0"}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]},
            }
        },
    }


async def _job_succeeded(client: ApiClient, name: str) -> bool:
    status = (await client.get(JOBS, name, "default")).get("status") or {}
    return bool(status.get("succeeded") == 1)


async def _create_gadget(client: ApiClient, name: str) -> bool:
    body = {"apiVersion": "example.aiokcm.io/v1", "kind": "Gadget", "metadata": {"name": name}}
    try:
        await client.create(GADGETS, body, "default")
    except NotFound:
        return False  # the CRD is not served (yet)
    return True


async def _exists(client: ApiClient, name: str) -> bool:
    try:
        await client.get(CONFIGMAPS, name, "default")
    except NotFound:
        return False
    return True


async def _ready(url: str) -> bool:
    status, _ = await get(f"{url}/readyz")
    return status == 200
