"""Cascading deletion of Jobs and ReplicaSets as users do it: `kubectl delete` (Background unless
--cascade says otherwise), Foreground, Orphan, and a raw API DELETE of a Job without a policy (Orphan)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubesim import KubeSim
from manager import JOBS, PODS, REPLICASETS
from tests.helpers import wait_for
from tests.integration.controllers.garbagecollector.harness import NS, Env, needs_kubectl, running
from tests.integration.controllers.job.harness import job_manifest
from tests.integration.controllers.replicaset.harness import rs_manifest

LONG_RUNNING = {"kubesim.aiokcm.io/run-seconds": "600"}
SLOW_TO_STOP = {"kubesim.aiokcm.io/ready-after-seconds": "0", "kubesim.aiokcm.io/terminate-seconds": "1"}


async def pods_with(env: Env, selector: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = (await env.client.list(PODS, NS, label_selector=selector))["items"]
    return items


async def running_pods(env: Env, selector: str, count: int) -> list[dict[str, Any]]:
    """Wait for `count` pods matching `selector`, each in the garbage collector's graph."""

    async def enough() -> list[dict[str, Any]] | None:
        pods = await pods_with(env, selector)
        return pods if len(pods) == count else None

    pods: list[dict[str, Any]] = await wait_for(enough, 10.0, message=f"{count} pods {selector}")
    for pod in pods:
        await env.in_graph(pod)
    return pods


async def no_pods(env: Env, selector: str) -> None:
    async def none_left() -> bool:
        return not await pods_with(env, selector)

    await wait_for(none_left, 10.0, message=f"pods {selector} deleted")


@needs_kubectl
async def test_kubectl_delete_replicaset_is_background_and_collects_its_pods(
    kubesim: KubeSim, tmp_path: Path
) -> None:
    async with running(kubesim, tmp_path) as env:
        await env.client.create(REPLICASETS, rs_manifest("web", 2))
        await running_pods(env, "app=web", 2)
        await env.kubectl("delete", "replicaset", "web", "-n", NS, "--timeout=20s")
        assert await env.get(REPLICASETS, "web") is None  # Background: the owner goes first, at once
        await no_pods(env, "app=web")


@needs_kubectl
async def test_kubectl_delete_job_is_background_and_collects_its_pods(
    kubesim: KubeSim, tmp_path: Path
) -> None:
    async with running(kubesim, tmp_path) as env:
        await env.client.create(
            JOBS, job_manifest("batch", completions=2, parallelism=2, annotations=LONG_RUNNING)
        )
        await running_pods(env, "batch.kubernetes.io/job-name=batch", 2)
        await env.kubectl("delete", "job", "batch", "-n", NS, "--timeout=20s")
        assert await env.get(JOBS, "batch") is None
        await no_pods(env, "batch.kubernetes.io/job-name=batch")


async def test_api_delete_of_a_job_without_policy_orphans_its_pods(kubesim: KubeSim, tmp_path: Path) -> None:
    async with running(kubesim, tmp_path) as env:
        job = await env.client.create(
            JOBS, job_manifest("keep", completions=2, parallelism=2, annotations=LONG_RUNNING)
        )
        pods = await running_pods(env, "batch.kubernetes.io/job-name=keep", 2)
        await env.client.delete(JOBS, "keep", NS)  # batch/v1 Jobs default to Orphan
        await env.wait_gone(JOBS, "keep")
        left = await pods_with(env, "batch.kubernetes.io/job-name=keep")
        assert {p["metadata"]["uid"] for p in left} == {p["metadata"]["uid"] for p in pods}
        for pod in left:
            refs = pod["metadata"].get("ownerReferences") or []
            assert all(ref["uid"] != job["metadata"]["uid"] for ref in refs), refs


@needs_kubectl
async def test_foreground_owner_waits_for_its_blocking_pods_then_goes(
    kubesim: KubeSim, tmp_path: Path
) -> None:
    async with running(kubesim, tmp_path, record=(PODS, REPLICASETS)) as env:
        await env.client.create(REPLICASETS, rs_manifest("fg", 2, annotations=SLOW_TO_STOP))
        pods = await running_pods(env, "app=fg", 2)
        assert all(ref.get("blockOwnerDeletion") for p in pods for ref in p["metadata"]["ownerReferences"])
        await env.kubectl("delete", "replicaset", "fg", "-n", NS, "--cascade=foreground", "--wait=false")

        async def waiting() -> bool:  # the pods take a second to stop: meanwhile the owner waits for them
            rs = await env.get(REPLICASETS, "fg")
            terminating = [
                p for p in await pods_with(env, "app=fg") if p["metadata"].get("deletionTimestamp")
            ]
            return bool(
                rs and rs["metadata"].get("finalizers") == ["foregroundDeletion"] and len(terminating) == 2
            )

        await wait_for(waiting, 5.0, message="the ReplicaSet waiting on terminating pods")
        await env.wait_gone(REPLICASETS, "fg")
        assert not await pods_with(env, "app=fg")
        order = [kind for kind, name in env.deleted if name.startswith("fg")]
        assert order == ["Pod", "Pod", "ReplicaSet"], env.deleted


@needs_kubectl
async def test_orphan_keeps_the_pods_without_their_owner_reference(kubesim: KubeSim, tmp_path: Path) -> None:
    async with running(kubesim, tmp_path) as env:
        rs = await env.client.create(REPLICASETS, rs_manifest("orph", 2))
        pods = await running_pods(env, "app=orph", 2)
        await env.kubectl("delete", "replicaset", "orph", "-n", NS, "--cascade=orphan", "--timeout=20s")
        assert await env.get(REPLICASETS, "orph") is None  # kubectl waited for the orphan finalizer to go
        left = await pods_with(env, "app=orph")
        assert {p["metadata"]["uid"] for p in left} == {p["metadata"]["uid"] for p in pods}
        for pod in left:
            refs = pod["metadata"].get("ownerReferences") or []
            assert all(ref["uid"] != rs["metadata"]["uid"] for ref in refs), refs
