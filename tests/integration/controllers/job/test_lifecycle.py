"""Suspend/resume, activeDeadlineSeconds, scale-down, managedBy, refused templates, adoption and orphans."""

from __future__ import annotations

from typing import Any

from prometheus_client import REGISTRY

from kubesim import KubeSim
from manager import JOBS, PODS, Invalid
from tests.helpers import wait_for
from tests.integration.controllers.job.harness import NS, Env, condition, job_manifest, running

LONG = {"kubesim.aiokcm.io/run-seconds": "30"}


async def _status_is(env: Any, name: str, **expected: int) -> dict[str, Any] | None:
    job = await env.job(name)
    status = job.get("status") or {}
    return job if all(int(status.get(k) or 0) == v for k, v in expected.items()) else None


async def test_suspend_and_resume(env: Env) -> None:
    await env.create("susp", completions=2, parallelism=2, suspend=True)
    job = await env.wait_condition("susp", "Suspended")
    cond = condition(job, "Suspended")
    assert cond is not None and (cond["reason"], cond["message"]) == ("JobSuspended", "Job suspended")
    assert "startTime" not in job["status"] and env.created("susp") == 0
    await env.wait_events("susp", "Suspended")

    await env.client.patch(JOBS, "susp", {"spec": {"suspend": False}}, NS)
    job = await env.wait_condition("susp", "Complete")
    cond = condition(job, "Suspended")
    assert cond is not None and cond["status"] == "False"
    assert (cond["reason"], cond["message"]) == ("JobResumed", "Job resumed")
    assert job["status"]["startTime"] and job["status"]["succeeded"] == 2 and env.created("susp") == 2
    await env.wait_events("susp", "Resumed")


async def test_suspending_a_running_job_deletes_pods_without_counting_them(env: Env) -> None:
    await env.create("susp2", completions=2, parallelism=2, annotations=LONG)
    job = await wait_for(lambda: _status_is(env, "susp2", active=2), 5, message="2 active")
    start = job["status"]["startTime"]
    await env.client.patch(JOBS, "susp2", {"spec": {"suspend": True}}, NS)
    job = await env.wait_condition("susp2", "Suspended")
    job = await wait_for(lambda: _status_is(env, "susp2", active=0, failed=0), 5, message="0 active")
    assert job["status"]["startTime"] == start  # kept while suspended
    await wait_for(lambda: _no_pods(env, "susp2"), 5, message="pods gone")
    assert len(await env.events("susp2", "SuccessfulDelete")) == 2


async def _no_pods(env: Any, name: str) -> bool:
    return not await env.pods(name)


async def test_active_deadline(env: Env) -> None:
    slow_exit = {**LONG, "kubesim.aiokcm.io/terminate-seconds": "1"}
    await env.create("deadline", completions=3, parallelism=2, activeDeadlineSeconds=1, annotations=slow_exit)
    interim = await env.wait_condition("deadline", "FailureTarget", timeout=10)
    # the verdict is recorded first; Failed waits until the deleted pods are gone
    assert condition(interim, "Failed") is None and interim["status"]["terminating"] == 2
    job = await env.wait_condition("deadline", "Failed", timeout=10)
    for ctype in ("FailureTarget", "Failed"):
        cond = condition(job, ctype)
        assert cond is not None and cond["reason"] == "DeadlineExceeded"
        assert cond["message"] == "Job was active longer than specified deadline"
    status = job["status"]
    assert status["failed"] == 2 and "active" not in status and status["terminating"] == 0
    assert env.created("deadline") == 2
    await env.wait_events("deadline", "DeadlineExceeded")


async def test_scale_down_deletes_extra_pods_uncounted(env: Env) -> None:
    await env.create("scale", completions=None, parallelism=3, annotations=LONG)
    await wait_for(lambda: _status_is(env, "scale", active=3, ready=3), 5, message="3 active and ready")
    await env.client.patch(JOBS, "scale", {"spec": {"parallelism": 1}}, NS)
    job = await wait_for(lambda: _status_is(env, "scale", active=1, ready=1, failed=0), 5, message="1 active")
    assert job["status"].get("failed", 0) == 0
    await env.wait_events("scale", "SuccessfulDelete", 2)
    assert env.created("scale") == 3


def _external_count(name: str) -> float:
    value = REGISTRY.get_sample_value(
        "job_controller_jobs_by_external_controller_total", {"controller_name": name}
    )
    return value or 0.0


def _metric(metric: str, /, **labels: str) -> float:
    return REGISTRY.get_sample_value(metric, labels) or 0.0


async def test_metrics_count_syncs_finished_jobs_and_pods(kubesim: KubeSim) -> None:
    finished = ("job_controller_jobs_finished_total", {"completion_mode": "NonIndexed", "result": "succeeded",
                                                        "reason": "CompletionsReached"})  # fmt: skip
    pods = (
        "job_controller_job_pods_finished_total",
        {"completion_mode": "NonIndexed", "result": "succeeded"},
    )
    created = ("job_controller_job_pods_creation_total", {"reason": "new", "status": "succeeded"})
    before = [_metric(name, **labels) for name, labels in (finished, pods, created)]
    async with running(kubesim) as env:
        await env.create("metered", completions=2, parallelism=2)
        await env.wait_condition("metered", "Complete")
    after = [_metric(name, **labels) for name, labels in (finished, pods, created)]
    assert [a - b for a, b in zip(after, before, strict=True)] == [1, 2, 2]
    syncs = _metric("job_controller_job_syncs_total", completion_mode="NonIndexed", result="success",
                    action="pods_created")  # fmt: skip
    assert syncs >= 1
    assert _metric("job_controller_terminated_pods_tracking_finalizer_total", event="add") >= 2
    assert _metric("workqueue_adds_total", name="job") >= 1


async def test_managed_by_other_controller_is_left_alone(kubesim: KubeSim) -> None:
    before = _external_count("example.com/other")
    async with running(kubesim) as env:
        await env.create("foreign", managedBy="example.com/other")
        await env.create("ours")
        await env.wait_condition("ours", "Complete")  # the controller has been busy meanwhile
        foreign = await env.job("foreign")
        assert not foreign.get("status") and env.created("foreign") == 0
        assert _external_count("example.com/other") == before + 1


async def test_configured_managed_by_claims_only_matching_jobs(kubesim: KubeSim) -> None:
    async with running(kubesim, job_controller_managed_by="aiokcm.io/job-controller") as env:
        await env.create("mine", managedBy="aiokcm.io/job-controller")
        await env.create("builtin")  # no managedBy: the built-in controller's, not ours
        await env.wait_condition("mine", "Complete")
        assert not (await env.job("builtin")).get("status") and env.created("builtin") == 0


async def test_refused_template_retries_with_failed_create_while_others_progress(env: Env) -> None:
    """The API server refuses the pods (invalid finalizer name in the template): FailedCreate events,
    retried with backoff; another Job completes meanwhile."""
    bad = job_manifest("refused")
    bad["spec"]["template"]["metadata"]["finalizers"] = ["not a valid finalizer!"]
    await env.client.create(JOBS, bad, NS)
    await env.create("fine", completions=2, parallelism=1)
    await env.wait_events("refused", "FailedCreate", 2, timeout=10)
    await env.wait_condition("fine", "Complete")
    events = await env.events("refused", "FailedCreate")
    assert events[0]["type"] == "Warning" and events[0]["message"].startswith("Error creating: ")
    assert env.created("refused") == 0


async def test_orphan_pod_finalizer_removed(kubesim: KubeSim) -> None:
    """The tracking finalizer of a pod without a controller is removed; a pod another kind of controller
    owns keeps it (not ours to touch)."""
    foreign_owner = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": "rs",
        "uid": "rs-uid",
        "controller": True,
    }
    async with running(kubesim) as env:
        for name, owners in (("foreign", [foreign_owner]), ("lonely", [])):
            pod = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": name,
                    "finalizers": ["batch.kubernetes.io/job-tracking"],
                    "ownerReferences": owners,
                },
                "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]},
            }
            await env.client.create(PODS, pod, NS)

        async def finalizer_gone() -> bool:
            current = await env.client.get(PODS, "lonely", NS)
            return not current["metadata"].get("finalizers")

        await wait_for(finalizer_gone, 5, message="orphan finalizer removed")
        foreign = await env.client.get(PODS, "foreign", NS)
        assert foreign["metadata"]["finalizers"] == ["batch.kubernetes.io/job-tracking"]


async def test_adoption_and_release(env: Env) -> None:
    job = await env.create("adopt", completions=None, parallelism=1, annotations=LONG)
    labels = job["spec"]["template"]["metadata"]["labels"]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "stray", "labels": dict(labels), "annotations": dict(LONG)},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]},
    }
    await env.client.create(PODS, pod, NS)

    async def owner_of_stray() -> dict[str, Any] | None:
        current = await env.client.get(PODS, "stray", NS)
        refs = current["metadata"].get("ownerReferences") or []
        return current if refs else None

    adopted = await wait_for(owner_of_stray, 5, message="stray adopted")
    assert adopted["metadata"]["ownerReferences"][0]["uid"] == job["metadata"]["uid"]
    assert "batch.kubernetes.io/job-tracking" in adopted["metadata"]["finalizers"]
    # parallelism 1 with two pods: one of them is deleted again
    await wait_for(lambda: _status_is(env, "adopt", active=1), 5, message="back to 1 active")

    survivor = next(p for p in await env.pods("adopt") if not p["metadata"].get("deletionTimestamp"))
    name = survivor["metadata"]["name"]
    await env.client.patch(
        PODS, name, {"metadata": {"labels": {"batch.kubernetes.io/controller-uid": "x"}}}, NS
    )

    async def released() -> bool:
        current = await env.client.get(PODS, name, NS)
        meta = current["metadata"]
        return not meta.get("ownerReferences") and not meta.get("finalizers")

    await wait_for(released, 5, message="pod released with its finalizer")


async def test_deleted_job_pods_lose_their_finalizer(env: Env) -> None:
    """Orphan mode delete (no garbage collector here): the running pods keep existing, the controller
    removes the tracking finalizer it put on them so they can go away later."""
    await env.create("gone", completions=2, parallelism=2, annotations=LONG)
    await wait_for(lambda: _status_is(env, "gone", active=2), 5, message="2 active")
    await env.client.delete(JOBS, "gone", NS, propagation_policy="Orphan")

    async def finalizers_removed() -> bool:
        pods = await env.pods("gone")
        return len(pods) == 2 and all(not p["metadata"].get("finalizers") for p in pods)

    await wait_for(finalizers_removed, 5, message="finalizers removed from the deleted Job's pods")


async def test_invalid_job_is_refused_by_the_api_server(env: Env) -> None:
    bad = job_manifest("negative", completions=-1)
    try:
        await env.client.create(JOBS, bad, NS)
    except Invalid as exc:
        assert exc.status == 422
    else:
        raise AssertionError("a Job with negative completions was accepted")
    await env.create("after")  # the controller carries on
    await env.wait_condition("after", "Complete")
