"""Progress deadline, a ReplicaSet the API server rejects, and a manager restart mid-rollout."""

from __future__ import annotations

import pytest

from controllers.deployment import DeploymentController
from controllers.replicaset import ReplicaSetController
from kubesim import KubeSim
from kubesim.storage.records import WatchEvent
from manager import DEPLOYMENTS, PODS, Request
from manager.client.rest import create_client
from manager.testing import run_manager
from tests.helpers import wait_for
from tests.integration.controllers.deployment.harness import (
    NEVER_READY,
    NS,
    cluster,
    condition,
    deployment_manifest,
    events,
    get,
    replicasets,
    rolling,
    set_image,
    wait_rolled_out,
)


@pytest.mark.slow
async def test_rollout_exceeding_its_progress_deadline() -> None:
    async with cluster() as env:
        manifest = deployment_manifest("web", 2, pod_annotations=NEVER_READY, progressDeadlineSeconds=2)
        await env.client.create(DEPLOYMENTS, manifest, NS)

        async def timed_out() -> dict[str, object] | None:
            c = condition(await get(env.client, "web"), "Progressing")
            return c if c is not None and c["reason"] == "ProgressDeadlineExceeded" else None

        c = await wait_for(timed_out, 10, message="ProgressDeadlineExceeded")
        (rs,) = await replicasets(env.client, "web")
        assert c["status"] == "False"
        assert c["message"] == f'ReplicaSet "{rs["metadata"]["name"]}" has timed out progressing.'
        available = condition(await get(env.client, "web"), "Available")
        assert available is not None and available["reason"] == "MinimumReplicasUnavailable"


async def test_replicaset_rejected_by_the_api_server_is_reported_without_a_hot_loop() -> None:
    async with cluster() as env:
        name = "d" * 250  # a valid Deployment name, but <name>-<hash> is too long for a ReplicaSet
        manifest = deployment_manifest("long", 1)
        manifest["metadata"]["name"] = name
        await env.client.create(DEPLOYMENTS, manifest, NS)
        await env.client.create(DEPLOYMENTS, deployment_manifest("fine", 1), NS)

        async def reported() -> dict[str, object] | None:
            c = condition(await get(env.client, name), "Progressing")
            return c if c is not None and c["reason"] == "ReplicaSetCreateError" else None

        c = await wait_for(reported, 10, message="Progressing ReplicaSetCreateError")
        assert c["status"] == "False" and str(c["message"]).startswith(
            f'Failed to create new replica set "{name}-'
        )
        # (no event: its name, <deployment>.<suffix>, is too long to be stored, as on a real cluster)
        await wait_rolled_out(env.client, "fine")  # the others keep being served
        ctl = env.controller(DeploymentController)
        key = Request(NS, name)
        await wait_for(lambda: ctl.queue.num_requeues(key) >= 3, 10, message="retries")
        assert ctl.queue.num_requeues(key) < 12  # backing off exponentially, not spinning


async def test_failed_replicaset_create_is_a_warning_event_and_recovers() -> None:
    async with cluster() as env:
        rule = env.sim.faults.fail(500, verb="create", resource="replicasets")
        await env.client.create(DEPLOYMENTS, deployment_manifest("web", 1), NS)

        async def warned() -> list[str] | None:
            found = await events(env.client, "web", "ReplicaSetCreateError")
            return [e["message"] for e in found] or None

        (message,) = await wait_for(warned, 10, message="a ReplicaSetCreateError event")
        assert message.startswith('Failed to create new replica set "web-') and "injected" in message
        assert rule.injected >= 1
        env.sim.faults.clear()
        d = await wait_rolled_out(env.client, "web", timeout=30)
        progressing = condition(d, "Progressing")
        assert progressing is not None and progressing["reason"] == "NewReplicaSetAvailable"


async def test_manager_restart_mid_rollout_resumes_without_extra_pods(kubesim: KubeSim) -> None:
    client = await create_client(master=kubesim.url, qps=0)
    created_new: set[str] = set()
    live: dict[str, bool] = {}
    peak = 0

    def on_pod(event: WatchEvent) -> None:
        nonlocal peak
        pod = event.entry.obj
        name = pod["metadata"]["name"]
        if event.type == "ADDED" and pod["spec"]["containers"][0]["image"] == "nginx:2":
            created_new.add(name)
        if event.type == "DELETED" or pod["metadata"].get("deletionTimestamp"):
            live.pop(name, None)
        else:
            live[name] = True
        peak = max(peak, len(live))

    try:
        slow = {"kubesim.aiokcm.io/ready-after-seconds": "0.5"}
        manifest = deployment_manifest("web", 6, strategy=rolling(2, 0), pod_annotations=slow)
        async with run_manager(kubesim.url, DeploymentController, ReplicaSetController):
            await client.create(DEPLOYMENTS, manifest, NS)
            await wait_rolled_out(client, "web")
            subscription = kubesim.store.subscribe("pods", on_pod)
            await set_image(client, "web", "nginx:2")

            async def midway() -> bool:
                rss = await replicasets(client, "web")
                return len(rss) == 2 and 0 < rss[1]["spec"]["replicas"] < 6

            await wait_for(midway, 10, message="the rollout under way")
        async with run_manager(kubesim.url, DeploymentController, ReplicaSetController):
            await wait_rolled_out(client, "web", timeout=30)
        subscription.close()
        rss = await replicasets(client, "web")
        assert len(rss) == 2 and [rs["spec"]["replicas"] for rs in rss] == [0, 6]
        assert len(created_new) == 6, sorted(created_new)  # not one new pod too many
        assert peak <= 8
        pods = (await client.list(PODS, NS, label_selector="app=web"))["items"]
        assert len([p for p in pods if not p["metadata"].get("deletionTimestamp")]) == 6
    finally:
        await client.close()
