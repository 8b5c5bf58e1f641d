"""Cascading deletion of Jobs and ReplicaSets as users do it: `kubectl delete` with no --cascade (kubectl
sends Background), Background, Foreground and Orphan, and raw API DELETEs without a policy (a Job's pods are
orphaned, a ReplicaSet's are collected)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kubesim import KubeSim
from manager import JOBS, PODS, REPLICASETS, GroupVersionResource
from tests.helpers import wait_for
from tests.integration.controllers.garbagecollector.harness import NS, Env, needs_kubectl, running
from tests.integration.controllers.job.harness import job_manifest
from tests.integration.controllers.replicaset.harness import rs_manifest

STAY_UP = "kubesim.aiokcm.io/run-seconds"  # Job pods run this long; ReplicaSet pods run forever anyway
SLOW_TO_STOP = "kubesim.aiokcm.io/terminate-seconds"  # a deleted pod lingers this long before it goes


@dataclass(frozen=True)
class Workload:
    kind: str
    gvr: GroupVersionResource

    def manifest(self, name: str, *, slow_to_stop: bool = False) -> dict[str, Any]:
        annotations = {STAY_UP: "600", "kubesim.aiokcm.io/ready-after-seconds": "0"}
        if slow_to_stop:
            annotations[SLOW_TO_STOP] = "1"
        if self.gvr == JOBS:
            return job_manifest(name, completions=2, parallelism=2, annotations=annotations)
        return rs_manifest(name, 2, annotations=annotations)

    def selector(self, name: str) -> str:
        return f"batch.kubernetes.io/job-name={name}" if self.gvr == JOBS else f"app={name}"


WORKLOADS = [Workload("job", JOBS), Workload("replicaset", REPLICASETS)]


async def pods_with(env: Env, selector: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = (await env.client.list(PODS, NS, label_selector=selector))["items"]
    return items


async def start(
    env: Env, workload: Workload, name: str, **kw: Any
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Create the workload; wait for its two pods, each in the garbage collector's graph."""
    owner = await env.client.create(workload.gvr, workload.manifest(name, **kw))

    async def both() -> list[dict[str, Any]] | None:
        pods = await pods_with(env, workload.selector(name))
        return pods if len(pods) == 2 else None

    pods: list[dict[str, Any]] = await wait_for(both, 10.0, message=f"the pods of {workload.kind} {name}")
    for pod in pods:
        await env.in_graph(pod)
    return owner, pods


async def no_pods(env: Env, selector: str) -> None:
    async def none_left() -> bool:
        return not await pods_with(env, selector)

    await wait_for(none_left, 10.0, message=f"pods {selector} deleted")


def refs_to(pod: dict[str, Any], owner: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in pod["metadata"].get("ownerReferences") or [] if r["uid"] == owner["metadata"]["uid"]]


@needs_kubectl
@pytest.mark.parametrize("workload", WORKLOADS, ids=lambda w: w.kind)
@pytest.mark.parametrize("cascade", [None, "background"], ids=["kubectl-default", "background"])
async def test_background_deletes_the_owner_then_its_pods(
    kubesim: KubeSim, tmp_path: Path, workload: Workload, cascade: str | None
) -> None:
    async with running(kubesim, tmp_path, record=(PODS, workload.gvr)) as env:
        _, pods = await start(env, workload, "bg")
        flags = [f"--cascade={cascade}"] if cascade else []
        await env.kubectl("delete", workload.kind, "bg", "-n", NS, "--timeout=20s", *flags)
        assert await env.get(workload.gvr, "bg") is None  # the owner goes at once
        await no_pods(env, workload.selector("bg"))  # then the garbage collector takes its pods
        pod_names = {p["metadata"]["name"] for p in pods}
        await wait_for(lambda: len(env.deleted) >= 3, 5.0, message="three deletions watched")
        order = [kind for kind, name in env.deleted if name in pod_names or name == "bg"]
        assert order == [workload.gvr.kind, "Pod", "Pod"], env.deleted


@needs_kubectl
@pytest.mark.parametrize("workload", WORKLOADS, ids=lambda w: w.kind)
async def test_foreground_owner_waits_for_its_blocking_pods_then_goes(
    kubesim: KubeSim, tmp_path: Path, workload: Workload
) -> None:
    async with running(kubesim, tmp_path, record=(PODS, workload.gvr)) as env:
        _, pods = await start(env, workload, "fg", slow_to_stop=True)
        assert all(ref.get("blockOwnerDeletion") for p in pods for ref in p["metadata"]["ownerReferences"])
        await env.kubectl("delete", workload.kind, "fg", "-n", NS, "--cascade=foreground", "--wait=false")

        async def waiting() -> bool:  # the pods take a second to stop: meanwhile the owner waits for them
            owner = await env.get(workload.gvr, "fg")
            finalizers = (owner or {}).get("metadata", {}).get("finalizers") or []
            stopping = [
                p
                for p in await pods_with(env, workload.selector("fg"))
                if p["metadata"].get("deletionTimestamp")
            ]
            return "foregroundDeletion" in finalizers and len(stopping) == 2

        await wait_for(waiting, 5.0, message=f"the {workload.kind} waiting on terminating pods")
        await env.wait_gone(workload.gvr, "fg")
        assert not await pods_with(env, workload.selector("fg"))
        pod_names = {p["metadata"]["name"] for p in pods}
        order = [kind for kind, name in env.deleted if name in pod_names or name == "fg"]
        assert order == ["Pod", "Pod", workload.gvr.kind], env.deleted


@needs_kubectl
@pytest.mark.parametrize("workload", WORKLOADS, ids=lambda w: w.kind)
async def test_orphan_keeps_the_pods_without_their_owner_reference(
    kubesim: KubeSim, tmp_path: Path, workload: Workload
) -> None:
    async with running(kubesim, tmp_path) as env:
        owner, pods = await start(env, workload, "orph")
        await env.kubectl("delete", workload.kind, "orph", "-n", NS, "--cascade=orphan", "--timeout=20s")
        assert await env.get(workload.gvr, "orph") is None  # kubectl waited for the orphan finalizer to go
        left = await pods_with(env, workload.selector("orph"))
        assert {p["metadata"]["uid"] for p in left} == {p["metadata"]["uid"] for p in pods}
        assert not any(refs_to(pod, owner) for pod in left)


async def test_api_delete_of_a_job_without_policy_orphans_its_pods(kubesim: KubeSim, tmp_path: Path) -> None:
    async with running(kubesim, tmp_path) as env:
        job, pods = await start(env, WORKLOADS[0], "keep")
        await env.client.delete(JOBS, "keep", NS)  # batch/v1 Jobs default to Orphan
        await env.wait_gone(JOBS, "keep")
        left = await pods_with(env, WORKLOADS[0].selector("keep"))
        assert {p["metadata"]["uid"] for p in left} == {p["metadata"]["uid"] for p in pods}
        assert not any(refs_to(pod, job) for pod in left)


async def test_api_delete_of_a_replicaset_without_policy_collects_its_pods(
    kubesim: KubeSim, tmp_path: Path
) -> None:
    async with running(kubesim, tmp_path) as env:
        await start(env, WORKLOADS[1], "gone")
        await env.client.delete(REPLICASETS, "gone", NS)  # apps/v1 defaults to Background
        assert await env.get(REPLICASETS, "gone") is None
        await no_pods(env, WORKLOADS[1].selector("gone"))
