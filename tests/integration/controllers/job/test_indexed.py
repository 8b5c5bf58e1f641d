"""Indexed Jobs end to end: pod shape, gap filling, duplicate/out-of-range pods, per-index backoff, FailIndex,
successPolicy."""

from __future__ import annotations

from typing import Any

from controllers.job.indexed.intervals import Intervals
from kubesim import KubeSim
from manager import PODS
from tests.helpers import wait_for
from tests.integration.controllers.job.harness import NS, Env, condition, running

INDEX = "batch.kubernetes.io/job-completion-index"
FAILURE_COUNT = "batch.kubernetes.io/job-index-failure-count"


def index_of(pod: dict[str, Any]) -> int:
    return int(pod["metadata"]["annotations"][INDEX])


async def test_indexed_job_pod_shape_and_completed_indexes(env: Env) -> None:
    await env.create("idx", completions=4, parallelism=2, completionMode="Indexed")
    job = await env.wait_condition("idx", "Complete")
    status = job["status"]
    assert status["completedIndexes"] == "0-3" and status["succeeded"] == 4
    assert condition(job, "Complete")["reason"] == "CompletionsReached"  # type: ignore[index]
    pods = await env.pods("idx")
    assert sorted(index_of(p) for p in pods) == [0, 1, 2, 3] and env.created("idx") == 4
    for pod in pods:
        i = index_of(pod)
        assert pod["metadata"]["labels"][INDEX] == str(i)
        assert pod["metadata"]["generateName"] == f"idx-{i}-"
        assert pod["spec"]["hostname"] == f"idx-{i}"
        env_vars = pod["spec"]["containers"][0]["env"]
        assert {
            "name": "JOB_COMPLETION_INDEX",
            "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{INDEX}']"}},
        } in [{k: v for k, v in e.items() if k != "valueFrom"} | {"valueFrom": {"fieldRef": {
            "fieldPath": e["valueFrom"]["fieldRef"]["fieldPath"]}}} for e in env_vars]  # fmt: skip
        assert FAILURE_COUNT not in pod["metadata"]["annotations"]  # only with backoffLimitPerIndex


async def test_indexed_gap_filling(env: Env) -> None:
    """Index 1's pod is deleted while running: it counts as failed and index 1 gets a new pod."""
    await env.create(
        "gap", completions=3, parallelism=3, completionMode="Indexed",
        annotations={"kubesim.aiokcm.io/run-seconds": "1.5"},
    )  # fmt: skip
    pods = await wait_for(lambda: _running_indexes(env, "gap", 3), 5, message="3 running pods")
    victim = next(p for p in pods if index_of(p) == 1)
    await env.client.delete(PODS, victim["metadata"]["name"], NS)
    job = await env.wait_condition("gap", "Complete")
    assert job["status"]["completedIndexes"] == "0-2"
    assert job["status"]["failed"] == 1 and job["status"]["succeeded"] == 3
    assert env.created("gap") == 4
    remaining = await env.pods("gap")
    assert sorted(index_of(p) for p in remaining) == [0, 1, 2]


async def _running_indexes(env: Any, name: str, count: int) -> list[dict[str, Any]] | None:
    pods = [p for p in await env.pods(name) if p["status"].get("phase") == "Running"]
    return pods if len(pods) == count else None


async def test_duplicate_and_out_of_range_pods_deleted(env: Env) -> None:
    job = await env.create(
        "dup", completions=2, parallelism=2, completionMode="Indexed",
        annotations={"kubesim.aiokcm.io/run-seconds": "1.5"},
    )  # fmt: skip
    await wait_for(lambda: _running_indexes(env, "dup", 2), 5, message="2 running pods")
    labels = job["spec"]["template"]["metadata"]["labels"]
    for name, index in (("dup-extra-0", "0"), ("dup-extra-9", "9")):
        # Pending forever: of two pods with index 0 it is the less valuable one, so it is the one deleted.
        annotations = {INDEX: index, "kubesim.aiokcm.io/unschedulable": "true"}
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "labels": {**labels, INDEX: index}, "annotations": annotations},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]},
        }
        await env.client.create(PODS, pod, NS)

    async def extras_gone() -> bool:
        names = {p["metadata"]["name"] for p in await env.pods("dup")}
        return not names & {"dup-extra-0", "dup-extra-9"}

    await wait_for(extras_gone, 5, message="duplicate and out-of-range pods deleted")
    done = await env.wait_condition("dup", "Complete")
    assert done["status"]["completedIndexes"] == "0,1" and done["status"]["succeeded"] == 2
    deleted = {e["message"] for e in await env.events("dup", "SuccessfulDelete")}
    assert {"Deleted pod: dup-extra-0", "Deleted pod: dup-extra-9"} <= deleted
    assert env.created("dup") == 2 + 2  # two by the controller, two by the test


async def test_backoff_limit_per_index(env: Env) -> None:
    """Index 1 always fails: it is retried once (failure count 0 then 1), then marked failed; the rest
    complete and the Job fails with FailedIndexes."""
    await env.create(
        "perindex", completions=3, parallelism=3, completionMode="Indexed", backoffLimitPerIndex=1,
        annotations={"kubesim.aiokcm.io/exit-codes-by-index": "1:3"},
    )  # fmt: skip
    job = await env.wait_condition("perindex", "Failed")
    status = job["status"]
    assert status["failedIndexes"] == "1" and status["completedIndexes"] == "0,2"
    assert status["failed"] == 2 and status["succeeded"] == 2
    for ctype in ("FailureTarget", "Failed"):
        cond = condition(job, ctype)
        assert cond is not None and cond["reason"] == "FailedIndexes"
        assert cond["message"] == "Job has failed indexes"
    pods = await env.pods("perindex")
    counts = sorted(p["metadata"]["annotations"][FAILURE_COUNT] for p in pods if index_of(p) == 1)
    assert counts == ["0", "1"] and env.created("perindex") == 4
    await env.wait_events("perindex", "FailedIndexes")


async def test_max_failed_indexes_exceeded(env: Env) -> None:
    await env.create(
        "maxfail", completions=3, parallelism=1, completionMode="Indexed", backoffLimitPerIndex=0,
        maxFailedIndexes=0, annotations={"kubesim.aiokcm.io/exit-codes-by-index": "0:3"},
    )  # fmt: skip
    job = await env.wait_condition("maxfail", "Failed")
    cond = condition(job, "Failed")
    assert cond is not None and cond["reason"] == "MaxFailedIndexesExceeded"
    assert cond["message"] == "Job has exceeded the specified maximal number of failed indexes"
    assert job["status"]["failedIndexes"] == "0" and env.created("maxfail") == 1


async def test_fail_index_action(kubesim: KubeSim) -> None:
    """A FailIndex rule ends the index at its first failure even though backoffLimitPerIndex allows more."""
    policy = {"rules": [{"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [9]}}]}
    async with running(kubesim) as env:
        await env.create(
            "failidx", completions=3, parallelism=3, completionMode="Indexed", backoffLimitPerIndex=5,
            podFailurePolicy=policy, annotations={"kubesim.aiokcm.io/exit-codes-by-index": "2:9"},
        )  # fmt: skip
        job = await env.wait_condition("failidx", "Failed")
        assert job["status"]["failedIndexes"] == "2" and job["status"]["completedIndexes"] == "0,1"
        assert job["status"]["failed"] == 1 and env.created("failidx") == 3
        assert condition(job, "Failed")["reason"] == "FailedIndexes"  # type: ignore[index]


async def test_success_policy(kubesim: KubeSim) -> None:
    """Indexes 0 and 1 succeeding is enough: SuccessCriteriaMet, the lingering pod is deleted, Complete."""
    policy = {"rules": [{"succeededIndexes": "0,1"}]}
    async with running(kubesim) as env:
        await env.create(
            "succpol", completions=3, parallelism=3, completionMode="Indexed", successPolicy=policy,
            annotations={"kubesim.aiokcm.io/exit-codes-by-index": "2:1"}, backoffLimit=100,
        )  # fmt: skip
        job = await env.wait_condition("succpol", "Complete")
        for ctype in ("SuccessCriteriaMet", "Complete"):
            cond = condition(job, ctype)
            assert cond is not None and cond["reason"] == "SuccessPolicy"
            assert cond["message"] == "Matched rules at index 0"
        completed = Intervals.parse(job["status"]["completedIndexes"])
        assert completed.has(0) and completed.has(1) and not completed.has(2)  # index 2 always fails
        assert "active" not in job["status"] and job["status"]["terminating"] == 0
