"""Failures end to end: backoffLimit, pod recreation backoff timing, OnFailure restarts, podFailurePolicy
actions, podReplacementPolicy."""

from __future__ import annotations

import itertools
import time
from typing import Any

import pytest

from controllers.job.policy.backoff import finish_time
from kubesim import KubeSim
from manager import PODS
from tests.helpers import wait_for
from tests.integration.controllers.job.harness import NS, Env, FastJobController, condition, running


def assert_failed(job: dict[str, Any], reason: str, message: str) -> None:
    for ctype in ("FailureTarget", "Failed"):
        cond = condition(job, ctype)
        assert cond is not None and cond["status"] == "True", ctype
        assert (cond["reason"], cond["message"]) == (reason, message)
    assert condition(job, "Complete") is None and "completionTime" not in job["status"]
    assert "active" not in job["status"] and job["status"]["terminating"] == 0


async def test_backoff_limit_exceeded(env: Env) -> None:
    await env.create("bl", backoffLimit=1, annotations={"kubesim.aiokcm.io/exit-code": "2"})
    job = await env.wait_condition("bl", "Failed")
    assert_failed(job, "BackoffLimitExceeded", "Job has reached the specified backoff limit")
    assert job["status"]["failed"] == 2 and job["status"].get("succeeded", 0) == 0
    assert env.created("bl") == 2
    events = await env.wait_events("bl", "BackoffLimitExceeded")
    assert events[0]["type"] == "Warning"
    assert events[0]["message"] == "Job has reached the specified backoff limit"


class TimedJobController(FastJobController):
    pod_failure_backoff = 1.5
    max_pod_failure_backoff = 3.0


@pytest.mark.slow
async def test_recreation_backoff_doubles_and_caps(kubesim: KubeSim) -> None:
    """Three failures then a success; replacements wait 1.5 s, 3 s, then 3 s again (capped, not 6 s).

    Each wait is measured from the finish time the failed pod records (what the controller counts from; second
    precision, so it is never later than the real finish) to the wall-clock moment the replacement is first
    seen. The controller may not create it earlier than the backoff; seeing it later includes sync, batching
    and polling latency, bounded generously at 1.5 s (uncapped, the third wait would be 6 s)."""
    seen: dict[str, float] = {}
    finished: dict[str, float] = {}
    async with running(kubesim, TimedJobController) as env:
        annotations = {"kubesim.aiokcm.io/fail-attempts": "3", "kubesim.aiokcm.io/run-seconds": "0.1"}
        await env.create("timed", backoffLimit=6, annotations=annotations)

        async def poll() -> bool:
            now = time.time()
            for pod in await env.pods("timed"):
                uid = pod["metadata"]["uid"]
                seen.setdefault(uid, now)
                if pod["status"].get("phase") in ("Succeeded", "Failed"):
                    finished.setdefault(uid, finish_time(pod))
            return condition(await env.job("timed"), "Complete") is not None

        await wait_for(poll, 20, interval=0.02, message="timed Job complete")
        job = await env.job("timed")
        assert job["status"]["failed"] == 3 and job["status"]["succeeded"] == 1 and env.created("timed") == 4
    order = sorted(seen, key=seen.__getitem__)
    gaps = [seen[nxt] - finished[prev] for prev, nxt in itertools.pairwise(order)]
    assert len(gaps) == 3
    for gap, backoff in zip(gaps, (1.5, 3.0, 3.0), strict=True):
        assert backoff - 0.05 <= gap <= backoff + 1.5, (gaps, backoff)


async def test_on_failure_restarts_count_against_backoff_limit(env: Env) -> None:
    await env.create(
        "onfail", backoffLimit=2, restart_policy="OnFailure",
        annotations={"kubesim.aiokcm.io/exit-code": "1", "kubesim.aiokcm.io/run-seconds": "0.1"},
    )  # fmt: skip
    job = await env.wait_condition("onfail", "Failed")
    assert_failed(job, "BackoffLimitExceeded", "Job has reached the specified backoff limit")
    assert env.created("onfail") == 1  # restarted in place, never replaced
    assert job["status"]["failed"] == 1  # the running pod is counted failed when the Job fails


async def test_pod_failure_policy_fail_job(kubesim: KubeSim) -> None:
    policy = {
        "rules": [
            {"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "In", "values": [42]}}
        ]
    }
    async with running(kubesim) as env:
        await env.create(
            "pfp-fail", completions=2, parallelism=2, backoffLimit=6, podFailurePolicy=policy,
            annotations={"kubesim.aiokcm.io/exit-codes-by-index": "", "kubesim.aiokcm.io/exit-code": "42"},
        )  # fmt: skip
        job = await env.wait_condition("pfp-fail", "Failed")
        cond = condition(job, "Failed")
        assert cond is not None and cond["reason"] == "PodFailurePolicy"
        assert cond["message"].startswith("Container main for pod default/pfp-fail-")
        assert cond["message"].endswith("failed with exit code 42 matching FailJob rule at index 0")
        assert_failed(job, "PodFailurePolicy", cond["message"])
        assert env.created("pfp-fail") == 2
        await env.wait_events("pfp-fail", "PodFailurePolicy")


async def test_pod_failure_policy_ignore(kubesim: KubeSim) -> None:
    """Exit code 7 is ignored: not counted against backoffLimit 0, the pod is replaced, the Job completes."""
    policy = {"rules": [{"action": "Ignore", "onExitCodes": {"operator": "In", "values": [7]}}]}
    async with running(kubesim) as env:
        await env.create(
            "pfp-ignore", backoffLimit=0, podFailurePolicy=policy,
            annotations={"kubesim.aiokcm.io/fail-attempts": "1", "kubesim.aiokcm.io/exit-code": "7"},
        )  # fmt: skip
        job = await env.wait_condition("pfp-ignore", "Complete")
        assert job["status"]["succeeded"] == 1 and job["status"].get("failed", 0) == 0
        assert env.created("pfp-ignore") == 2


async def test_pod_failure_policy_count(kubesim: KubeSim) -> None:
    """Count is the default treatment: with backoffLimit 0 the first failure fails the Job."""
    policy = {"rules": [{"action": "Count", "onExitCodes": {"operator": "In", "values": [3]}}]}
    async with running(kubesim) as env:
        await env.create(
            "pfp-count", backoffLimit=0, podFailurePolicy=policy,
            annotations={"kubesim.aiokcm.io/exit-code": "3"},
        )  # fmt: skip
        job = await env.wait_condition("pfp-count", "Failed")
        assert_failed(job, "BackoffLimitExceeded", "Job has reached the specified backoff limit")
        assert job["status"]["failed"] == 1 and env.created("pfp-count") == 1


async def test_pod_replacement_policy_failed_waits_for_termination(env: Env) -> None:
    """podReplacementPolicy Failed: a deleted pod is shown as terminating and replaced only once Failed."""
    await env.create(
        "prp", podReplacementPolicy="Failed",
        annotations={"kubesim.aiokcm.io/run-seconds": "30", "kubesim.aiokcm.io/terminate-seconds": "1"},
    )  # fmt: skip
    pods = await wait_for(lambda: _running(env, "prp"), 5, message="running pod")
    await env.client.delete(PODS, pods[0]["metadata"]["name"], NS)

    async def terminating_shown() -> dict[str, Any] | None:
        job = await env.job("prp")
        return job if job["status"].get("terminating") == 1 else None

    job = await wait_for(terminating_shown, 5, message="status.terminating 1")
    assert "active" not in job["status"] and env.created("prp") == 1  # not replaced while terminating
    await wait_for(lambda: env.created("prp") == 2, 5, message="replacement after the pod failed")
    job = await wait_for(
        lambda: _status_is(env, "prp", failed=1, active=1, terminating=0), 5, message="replaced"
    )


async def _running(env: Any, name: str) -> list[dict[str, Any]] | None:
    pods = [p for p in await env.pods(name) if p["status"].get("phase") == "Running"]
    return pods or None


async def _status_is(env: Any, name: str, **expected: int) -> dict[str, Any] | None:
    job = await env.job(name)
    status = job.get("status") or {}
    return job if all(int(status.get(k) or 0) == v for k, v in expected.items()) else None


@pytest.mark.slow
async def test_pod_failure_policy_ignores_disruption(kubesim: KubeSim) -> None:
    """onPodConditions: a pod failing with DisruptionTarget=True (as set on eviction) is not counted, even
    with backoffLimit 0; it is replaced and the Job completes."""
    policy = {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}
    annotations = {"kubesim.aiokcm.io/run-seconds": "2", "kubesim.aiokcm.io/terminate-seconds": "0.3"}
    async with running(kubesim) as env:
        await env.create("disrupted", backoffLimit=0, podFailurePolicy=policy, annotations=annotations)
        pod = (await wait_for(lambda: _running(env, "disrupted"), 5, message="running pod"))[0]
        name = pod["metadata"]["name"]
        disruption = {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI"}
        await env.client.patch(
            PODS,
            name,
            {"status": {"conditions": [disruption]}},
            NS,
            patch_type="strategic",
            subresource="status",
        )
        await env.client.delete(PODS, name, NS)
        job = await env.wait_condition("disrupted", "Complete", timeout=15)
        assert job["status"]["succeeded"] == 1 and job["status"].get("failed", 0) == 0
        assert env.created("disrupted") == 2
