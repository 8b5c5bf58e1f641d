"""Flows of the RBAC scenario through the paths a quiet cluster never takes: adopting orphans (the owner read
afresh first) and releasing dependents that stopped matching, a Job trimmed to its parallelism and suspended
twice (the second Suspended event patches the first), a ReplicaSet that lost a pod by its labels, and a
Pipeline whose step Job's name is taken."""

from __future__ import annotations

from typing import Any

from controllers.pipeline import PIPELINES
from manager import EVENTS, JOBS, PODS, REPLICASETS
from tests.integration.rbac.manifests import NS, long_job, pipeline, pod, replicaset
from tests.integration.rbac.run import Run


def _controlled_by(obj: dict[str, Any], uid: str) -> bool:
    refs = obj["metadata"].get("ownerReferences") or ()
    return any(r.get("uid") == uid and r.get("controller") for r in refs)


async def job_adopts_trims_and_suspends(run: Run) -> None:
    """A suspended Job resumed (two pods), given a matching orphan (adopted after a fresh read of the Job,
    then one pod too many deleted), suspended again: its pods deleted and the Suspended event repeated."""
    client = run.client
    job = await client.create(JOBS, long_job("tidy"), NS)
    uid, labels = job["metadata"]["uid"], job["spec"]["selector"]["matchLabels"]

    async def condition(status: str) -> bool:
        conditions = ((await client.get(JOBS, "tidy", NS)).get("status") or {}).get("conditions") or ()
        return any(c["type"] == "Suspended" and c["status"] == status for c in conditions)

    async def live_pods() -> list[dict[str, Any]]:
        selector = ",".join(f"{k}={v}" for k, v in labels.items())
        pods = (await client.list(PODS, NS, label_selector=selector))["items"]
        return [p for p in pods if not p["metadata"].get("deletionTimestamp")]

    async def count(n: int) -> bool:
        return len(await live_pods()) == n

    await run.until(lambda: condition("True"), "the Job suspended")
    await client.patch(JOBS, "tidy", {"spec": {"suspend": False}}, NS)
    await run.until(lambda: count(2), "the resumed Job's two pods")
    await client.create(PODS, pod("stray", labels), NS)
    await run.until(lambda: count(2), "the orphan adopted and one pod over parallelism deleted")
    assert all(_controlled_by(p, uid) for p in await live_pods())
    await client.patch(JOBS, "tidy", {"spec": {"suspend": True}}, NS)

    async def suspended_twice() -> bool:
        query = "involvedObject.name=tidy,reason=Suspended"
        items = (await client.list(EVENTS, NS, field_selector=query))["items"]
        return bool(items) and items[0].get("count") == 2 and await count(0)

    await run.until(suspended_twice, "the Job's pods deleted and its Suspended event counted twice")


async def replicaset_releases_a_relabelled_pod(run: Run) -> None:
    client = run.client
    rs = await client.create(REPLICASETS, replicaset("keeper"), NS)

    async def owned_pods() -> list[dict[str, Any]]:
        pods = (await client.list(PODS, NS, label_selector="app=keeper"))["items"]
        return [p for p in pods if _controlled_by(p, rs["metadata"]["uid"])]

    async def one() -> bool:
        return len(await owned_pods()) == 1

    await run.until(one, "the ReplicaSet's pod")
    name = (await owned_pods())[0]["metadata"]["name"]
    await client.patch(PODS, name, {"metadata": {"labels": {"app": "elsewhere"}}}, NS)

    async def released() -> bool:
        return not (await client.get(PODS, name, NS))["metadata"].get("ownerReferences")

    await run.until(released, "the relabelled pod released by its ReplicaSet")


async def stray_replicaset(run: Run) -> None:
    """An orphan ReplicaSet matching the Deployment's selector, of another template and no replicas: the
    Deployment adopts it (a fresh read of the Deployment first) and, revisionHistoryLimit 0, deletes it."""
    stray = replicaset("web-stray", app="web", replicas=0)
    stray["spec"]["template"]["spec"]["containers"][0]["image"] = "busybox:0"
    await run.client.create(REPLICASETS, stray, NS)


async def pipeline_meets_a_foreign_job(run: Run) -> None:
    """The Job name of the Pipeline's step is taken by a Job it does not control: the create meets
    AlreadyExists, the controller reads that Job (and retries); once it is gone the Pipeline runs."""
    client = run.client
    foreign = long_job("clash-only")
    await client.create(JOBS, foreign, NS)
    await client.create(PIPELINES, pipeline("clash"), NS)
    await run.asked_for("pipeline-controller get jobs clash-only")
    await client.delete(JOBS, "clash-only", NS, propagation_policy="Background")

    async def succeeded() -> bool:
        obj = await client.get(PIPELINES, "clash", NS)
        return (obj.get("status") or {}).get("phase") == "Succeeded"

    await run.until(succeeded, "the Pipeline Succeeded with its own Job")
