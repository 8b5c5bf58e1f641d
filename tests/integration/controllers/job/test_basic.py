"""Job controller end to end against kubesim: plain and work-queue Jobs, pod shape, counting."""

from __future__ import annotations

from tests.helpers import wait_for
from tests.integration.controllers.job.harness import Env, condition


async def test_plain_job_completes(env: Env) -> None:
    await env.create("plain", completions=3, parallelism=2)
    job = await env.wait_condition("plain", "Complete")
    status = job["status"]
    assert status["succeeded"] == 3 and status.get("failed", 0) == 0
    assert "active" not in status and status["ready"] == 0 and status["terminating"] == 0
    assert status["uncountedTerminatedPods"] == {}  # empty lists omitted, as upstream's omitempty does
    assert status["startTime"] and status["completionTime"]
    for ctype in ("SuccessCriteriaMet", "Complete"):
        cond = condition(job, ctype)
        assert cond is not None and cond["reason"] == "CompletionsReached"
        assert cond["message"] == "Reached expected number of succeeded pods"
    assert status["completionTime"] == condition(job, "Complete")["lastTransitionTime"]  # type: ignore[index]
    pods = await env.pods("plain")
    assert len(pods) == 3 and env.created("plain") == 3
    for pod in pods:
        meta = pod["metadata"]
        assert meta["generateName"] == "plain-"
        assert "finalizers" not in meta  # tracking finalizer removed once counted (empty: omitted)
        ref = meta["ownerReferences"][0]
        assert ref["kind"] == "Job" and ref["controller"] and ref["blockOwnerDeletion"]
    await env.wait_events("plain", "SuccessfulCreate", 3)
    await env.wait_events("plain", "Completed", 1)


async def test_work_queue_job(env: Env) -> None:
    """completions unset: parallelism pods; complete once one succeeded and none is active."""
    await env.create("queue", completions=None, parallelism=3)
    job = await env.wait_condition("queue", "Complete")
    assert job["status"]["succeeded"] == 3
    assert env.created("queue") == 3
    assert await wait_for(lambda: env.created("queue") == 3)
