"""What the Job controller's writes keep of their answers (only the metadata is asked back): the events
name the generated pods, and a status write leaves the Job as sent with the server's new metadata."""

from __future__ import annotations

import pytest

from manager import Conflict
from tests.integration.controllers.job.harness import Env, condition


async def test_created_events_name_the_generated_pods(env: Env) -> None:
    await env.create("named", completions=2, parallelism=2)
    await env.wait_condition("named", "Complete")
    events = await env.wait_events("named", "SuccessfulCreate", 2)
    names = {p["metadata"]["name"] for p in await env.pods("named")}
    assert len(names) == 2 and all(n.startswith("named-") for n in names)
    assert {e["message"] for e in events} == {f"Created pod: {n}" for n in names}


async def test_status_write_returns_the_sent_job_with_the_new_metadata(env: Env) -> None:
    # Suspended: the controller writes its Suspended condition once, then leaves the Job alone.
    await env.create("held", suspend=True)
    await env.wait_condition("held", "Suspended")
    job = await env.job("held")
    job["metadata"].pop("managedFields", None)
    job["status"]["active"] = 0  # omitted by the server (omitempty), read as zero by the controller
    job["status"]["uncountedTerminatedPods"] = {"succeeded": [], "failed": []}  # omitted too
    suspended = condition(job, "Suspended")
    assert suspended is not None
    suspended["lastProbeTime"] = "2026-01-02T03:04:05Z"  # a real change: a new resourceVersion
    sent_status = {**job["status"]}

    updated = await env.ctl.update_status(job)

    stored = await env.job("held")
    assert updated["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]
    assert updated["metadata"]["resourceVersion"] != job["metadata"]["resourceVersion"]
    assert "managedFields" not in updated["metadata"] and stored["metadata"]["managedFields"]
    assert {k: v for k, v in stored["metadata"].items() if k != "managedFields"} == updated["metadata"]
    assert (updated["apiVersion"], updated["kind"]) == ("batch/v1", "Job")
    assert updated["spec"] == stored["spec"] and updated["status"] == sent_status
    # The server's status is the sent one up to Go's omission of zero values.
    assert stored["status"]["uncountedTerminatedPods"] == {} and "active" not in stored["status"]
    assert {k: v for k, v in stored["status"].items() if k not in ("active", "uncountedTerminatedPods")} == {
        k: v for k, v in sent_status.items() if k not in ("active", "uncountedTerminatedPods")
    }
    assert condition(stored, "Suspended") == suspended


async def test_status_write_without_answer_lands_and_keeps_typed_errors(env: Env) -> None:
    await env.create("quiet", suspend=True)
    await env.wait_condition("quiet", "Suspended")
    job = await env.job("quiet")
    job["metadata"].pop("managedFields", None)
    suspended = condition(job, "Suspended")
    assert suspended is not None
    suspended["lastProbeTime"] = "2026-01-02T03:04:05Z"

    await env.ctl.write_status(job)
    stored = await env.job("quiet")
    assert condition(stored, "Suspended") == suspended
    assert stored["metadata"]["resourceVersion"] != job["metadata"]["resourceVersion"]
    with pytest.raises(Conflict):  # the same write at the old resourceVersion
        await env.ctl.write_status(job)
