"""Every built-in controller at once against kubesim, as `aiokcm` runs them: the TTL-after-finished and
namespace controllers' deletions carried through by the garbage collector."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from controllers.deployment import DeploymentController
from controllers.replicaset import ReplicaSetController
from controllers.ttlafterfinished import TTLAfterFinishedController
from manager import (
    CONFIGMAPS,
    CUSTOMRESOURCEDEFINITIONS,
    DEPLOYMENTS,
    JOBS,
    NAMESPACES,
    PODS,
    REPLICASETS,
    ApiClient,
    NotFound,
)
from manager.testing import run_controllers, wait_for
from tests.integration.controllers.garbagecollector.harness import QuickGarbageCollector
from tests.integration.controllers.job.harness import FastJobController, job_manifest
from tests.integration.controllers.namespace.harness import (
    KUBECTL,
    WIDGETS,
    FastNamespaceController,
    configmap,
    gone,
    job,
    kubectl,
    namespace,
    replicaset,
    running_pods,
    widget_crd,
)

EVERY_CONTROLLER = (
    QuickGarbageCollector,
    FastNamespaceController,
    TTLAfterFinishedController,
    FastJobController,
    ReplicaSetController,
    DeploymentController,
)


async def absent(client: ApiClient, gvr: Any, name: str, namespace: str) -> bool:
    try:
        await client.get(gvr, name, namespace)
    except NotFound:
        return True
    return False


async def test_a_finished_job_with_ttl_zero_goes_with_its_pods() -> None:
    async with run_controllers(*EVERY_CONTROLLER) as env:
        client = env.client
        body = job_manifest("short-lived")
        body["spec"]["ttlSecondsAfterFinished"] = 0
        created = await client.create(JOBS, body, "default")
        uid = created["metadata"]["uid"]

        async def owned_pods() -> list[dict[str, Any]]:
            pods = (await client.list(PODS, "default"))["items"]
            return [p for p in pods if any(r["uid"] == uid for r in p["metadata"].get("ownerReferences", []))]

        await wait_for(owned_pods, message="the Job's pod")

        async def job_and_pods_gone() -> bool:
            return await absent(client, JOBS, "short-lived", "default") and not await owned_pods()

        await wait_for(job_and_pods_gone, timeout=15, message="the Job and its pods to be deleted")


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed on this machine (not on PATH)")
async def test_kubectl_delete_namespace_with_owned_custom_resources(tmp_path: Path) -> None:
    async with run_controllers(*EVERY_CONTROLLER) as env:
        client = env.client
        await client.create(NAMESPACES, namespace("shop"))
        await client.create(CUSTOMRESOURCEDEFINITIONS, widget_crd())

        async def widget() -> dict[str, Any] | None:
            body = {"apiVersion": "example.aiokcm.io/v1", "kind": "Widget", "metadata": {"name": "w"}}
            try:
                created: dict[str, Any] = await client.create(WIDGETS, body, "shop")
            except NotFound:
                return None  # the CRD is not served yet
            return created

        owner = await wait_for(widget, message="the widget")
        owned = configmap("widget-settings", "shop")
        owned["metadata"]["ownerReferences"] = [
            {
                "apiVersion": "example.aiokcm.io/v1",
                "kind": "Widget",
                "name": "w",
                "uid": owner["metadata"]["uid"],
            }
        ]
        await client.create(CONFIGMAPS, owned)
        await client.create(CONFIGMAPS, configmap("plain", "shop"))
        await client.create(REPLICASETS, replicaset("web", "shop"))
        await client.create(JOBS, job("batch", "shop"))
        await running_pods(client, "shop", 3)

        code, output = await kubectl(
            env.sim.kubeconfig, tmp_path, "delete", "namespace", "shop", "--timeout=60s"
        )

        assert code == 0, output
        assert await gone(client, "shop")
        for gvr in (PODS, CONFIGMAPS, JOBS, REPLICASETS, WIDGETS):
            assert (await client.list(gvr, "shop"))["items"] == [], gvr


async def test_one_informer_per_resource_for_the_whole_process() -> None:
    async with run_controllers(*EVERY_CONTROLLER) as env:
        gc = env.controller(QuickGarbageCollector)
        await wait_for(gc.is_synced, message="the garbage collector's monitors")
        cluster = env.manager.cluster
        assert cluster is not None
        informers = cluster.factory.informers()
        resources = [informer.gvr for informer in informers]
        assert len(resources) == len(set(resources))  # pods, jobs, replicasets, namespaces: each once
        by_resource = {informer.gvr: informer for informer in informers}
        assert not by_resource[PODS].metadata_only  # the Job and ReplicaSet controllers' full pods informer
        assert not by_resource[JOBS].metadata_only
        assert not by_resource[
            REPLICASETS
        ].metadata_only  # shared by the ReplicaSet and Deployment controllers
        assert not by_resource[DEPLOYMENTS].metadata_only
        assert by_resource[CONFIGMAPS].metadata_only  # only the garbage collector watches ConfigMaps
