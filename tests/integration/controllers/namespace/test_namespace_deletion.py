"""The namespace controller against kubesim over HTTP: kubesim only marks a deleted namespace (as
kube-apiserver does); the controller empties it, then releases it through /finalize."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from controllers.namespace.conditions import (
    CONTENT_FAILURE,
    CONTENT_REMAINING,
    DISCOVERY_FAILURE,
    FINALIZERS_REMAINING,
    GROUP_VERSION_PARSING_FAILURE,
)
from controllers.replicaset import ReplicaSetController
from manager import (
    CONFIGMAPS,
    CUSTOMRESOURCEDEFINITIONS,
    JOBS,
    NAMESPACES,
    PODS,
    REPLICASETS,
    ApiClient,
    GroupVersionResource,
    NotFound,
    Request,
)
from manager.testing import run_controllers, wait_for
from tests.integration.controllers.job.harness import FastJobController
from tests.integration.controllers.namespace.harness import (
    KUBECTL,
    WIDGETS,
    FastNamespaceController,
    conditions,
    configmap,
    configmap_names,
    gone,
    job,
    kubectl,
    namespace,
    replicaset,
    running_pods,
    widget_crd,
)

SERVICES = GroupVersionResource("", "v1", "services", "Service")


async def condition_true(client: ApiClient, name: str, ctype: str) -> dict[str, dict[str, Any]]:
    async def reported() -> dict[str, dict[str, Any]] | None:
        found = conditions(await client.get(NAMESPACES, name))
        return found if found.get(ctype, {}).get("status") == "True" else None

    result: dict[str, dict[str, Any]] = await wait_for(reported, timeout=15, message=f"{ctype} on {name}")
    return result


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed on this machine (not on PATH)")
async def test_kubectl_delete_namespace_completes_once_its_content_is_gone(tmp_path: Path) -> None:
    controllers = (FastNamespaceController, FastJobController, ReplicaSetController)
    async with run_controllers(*controllers) as env:
        client = env.client
        await client.create(NAMESPACES, namespace("team"))
        await client.create(CUSTOMRESOURCEDEFINITIONS, widget_crd())

        async def widget_created() -> bool:
            try:
                body = {"apiVersion": "example.aiokcm.io/v1", "kind": "Widget", "metadata": {"name": "w"}}
                await client.create(WIDGETS, body, "team")
            except NotFound:
                return False  # the CRD is not served yet
            return True

        await wait_for(widget_created, message="the widget")
        await client.create(CONFIGMAPS, configmap("settings", "team"))
        # services have no deletecollection (405, as upstream): the controller deletes them one by one
        await client.create(
            SERVICES, {"metadata": {"name": "front"}, "spec": {"ports": [{"port": 80}]}}, "team"
        )
        await client.create(REPLICASETS, replicaset("web", "team"))
        await client.create(JOBS, job("batch", "team"))
        await running_pods(client, "team", 3)

        code, output = await kubectl(
            env.sim.kubeconfig, tmp_path, "delete", "namespace", "team", "--timeout=60s"
        )

        assert code == 0, output
        assert 'namespace "team" deleted' in output
        assert await gone(client, "team")
        for gvr in (PODS, CONFIGMAPS, SERVICES, JOBS, REPLICASETS, WIDGETS):
            assert (await client.list(gvr, "team"))["items"] == [], gvr


async def test_content_held_by_a_finalizer_is_reported_and_holds_the_namespace() -> None:
    async with run_controllers(FastNamespaceController) as env:
        client = env.client
        await client.create(NAMESPACES, namespace("held"))
        await client.create(CONFIGMAPS, configmap("kept", "held", ["example.com/hold"]))
        await client.create(CONFIGMAPS, configmap("plain", "held"))
        await client.delete(NAMESPACES, "held")

        found = await condition_true(client, "held", FINALIZERS_REMAINING)

        assert (found[FINALIZERS_REMAINING]["reason"], found[FINALIZERS_REMAINING]["message"]) == (
            "SomeFinalizersRemain",
            "Some content in the namespace has finalizers remaining: "
            "example.com/hold in 1 resource instances",
        )
        assert (found[CONTENT_REMAINING]["status"], found[CONTENT_REMAINING]["message"]) == (
            "True",
            "Some resources are remaining: configmaps. has 1 resource instances",
        )
        assert found[CONTENT_REMAINING]["reason"] == "SomeResourcesRemain"
        healthy = {
            DISCOVERY_FAILURE: ("ResourcesDiscovered", "All resources successfully discovered"),
            GROUP_VERSION_PARSING_FAILURE: (
                "ParsedGroupVersions",
                "All legacy kube types successfully parsed",
            ),
            CONTENT_FAILURE: (
                "ContentDeleted",
                "All content successfully deleted, may be waiting on finalization",
            ),
        }
        for ctype, (reason, message) in healthy.items():
            assert (found[ctype]["status"], found[ctype]["reason"], found[ctype]["message"]) == (
                "False",
                reason,
                message,
            )
        ns = await client.get(NAMESPACES, "held")
        assert ns["spec"]["finalizers"] == ["kubernetes"] and ns["status"]["phase"] == "Terminating"
        assert await configmap_names(client, "held") == ["kept"]
        kept = await client.get(CONFIGMAPS, "kept", "held")
        assert kept["metadata"]["deletionTimestamp"]

        await client.patch(CONFIGMAPS, "kept", {"metadata": {"finalizers": None}}, "held")

        await wait_for(lambda: gone(client, "held"), timeout=15, message="the namespace removed")


async def test_pods_go_first_and_their_grace_period_sets_the_next_look() -> None:
    async with run_controllers(FastNamespaceController) as env:
        client = env.client
        ctl = env.controller(FastNamespaceController)
        await client.create(NAMESPACES, namespace("graceful"))
        await client.create(CONFIGMAPS, configmap("settings", "graceful"))
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "slow",
                # The simulated kubelet keeps it terminating for a minute.
                "annotations": {"kubesim.aiokcm.io/terminate-seconds": "60"},
            },
            "spec": {"terminationGracePeriodSeconds": 30, "containers": [{"name": "c", "image": "busybox"}]},
        }
        await client.create(PODS, pod, "graceful")
        await running_pods(client, "graceful", 1)
        await client.delete(NAMESPACES, "graceful")

        found = await condition_true(client, "graceful", CONTENT_REMAINING)

        assert (
            found[CONTENT_REMAINING]["message"]
            == "Some resources are remaining: pods. has 1 resource instances"
        )
        assert (await client.get(PODS, "slow", "graceful"))["metadata"]["deletionTimestamp"]
        # Ordered deletion: nothing but pods is touched while a pod remains.
        assert "deletionTimestamp" not in (await client.get(CONFIGMAPS, "settings", "graceful"))["metadata"]
        # The 30 s grace period has not passed: the key waits (30/2 + 1 = 16 s) instead of being retried.
        key = Request("", "graceful")
        await wait_for(
            lambda: ctl.queue.waiting == 1 and key not in ctl.queue.processing and not len(ctl.queue),
            message="the namespace parked for later",
        )
        assert ctl.stats.errors == 0

        # Once the grace period has passed a pod still there is unexpected: an error, retried with backoff.
        ctl.now = lambda: time.time() + 31
        await client.patch(NAMESPACES, "graceful", {"metadata": {"labels": {"poke": "1"}}})
        found = await condition_true(client, "graceful", CONTENT_FAILURE)
        assert found[CONTENT_FAILURE]["message"] == (
            "Failed to delete all resource types, 1 remaining: "
            "unexpected items still remain in namespace: graceful for gvr: /v1, Resource=pods"
        )

        await client.delete(PODS, "slow", "graceful", grace_period_seconds=0)
        await wait_for(lambda: gone(client, "graceful"), timeout=15, message="the namespace removed")


async def test_only_the_kubernetes_finalizer_is_removed_and_the_namespace_is_never_deleted() -> None:
    async with run_controllers(FastNamespaceController) as env:
        client = env.client
        body = {**namespace("shared"), "spec": {"finalizers": ["example.com/other"]}}
        await client.create(NAMESPACES, body)
        await client.delete(NAMESPACES, "shared")

        async def finalized() -> dict[str, Any] | None:
            ns = await client.get(NAMESPACES, "shared")
            return ns if ns["spec"].get("finalizers") == ["example.com/other"] else None

        ns = await wait_for(finalized, timeout=15, message="the kubernetes finalizer removed")
        assert ns["status"]["phase"] == "Terminating"
        assert conditions(ns)[CONTENT_REMAINING]["reason"] == "ContentRemoved"

        await client.update(NAMESPACES, {**ns, "spec": {"finalizers": []}}, subresource="finalize")
        assert await gone(client, "shared")
