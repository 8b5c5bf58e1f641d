"""The TTL-after-finished controller against kubesim over HTTP, with the Job and ReplicaSet controllers
running too and no garbage collector, so a Job deleted in the foreground stays with `foregroundDeletion`:
these tests assert that much. The Job and its pods going, with the garbage collector running, is in
tests/integration/controllers/test_cascading_together.py."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from prometheus_client import REGISTRY

from controllers.common.podutil import parse_time
from controllers.replicaset import ReplicaSetController
from controllers.ttlafterfinished import TTLAfterFinishedController
from manager import JOBS, ApiClient, Request
from manager.testing import TestEnv, run_controllers, wait_for
from tests.integration.controllers.job.harness import FastJobController, job_manifest

NS = "default"
METRIC = "ttl_after_finished_controller_job_deletion_duration_seconds_count"


@pytest.fixture
async def env() -> AsyncIterator[TestEnv]:
    async with run_controllers(
        TTLAfterFinishedController, FastJobController, ReplicaSetController
    ) as started:
        yield started


def ttl_controller(env: TestEnv) -> TTLAfterFinishedController:
    return env.controller(TTLAfterFinishedController)


async def create_job(client: ApiClient, name: str, ttl: int) -> dict[str, Any]:
    body = job_manifest(name)
    body["spec"]["ttlSecondsAfterFinished"] = ttl
    created: dict[str, Any] = await client.create(JOBS, body, NS)
    return created


async def completed(client: ApiClient, name: str) -> dict[str, Any]:
    async def check() -> dict[str, Any] | None:
        job = await client.get(JOBS, name, NS)
        conds = (job.get("status") or {}).get("conditions") or ()
        return job if any(c["type"] == "Complete" and c["status"] == "True" for c in conds) else None

    result: dict[str, Any] = await wait_for(check, timeout=15, message=f"{name} complete")
    return result


async def deleting(client: ApiClient, name: str, timeout: float = 10) -> dict[str, Any]:
    async def check() -> dict[str, Any] | None:
        job = await client.get(JOBS, name, NS)
        return job if job["metadata"].get("deletionTimestamp") else None

    result: dict[str, Any] = await wait_for(check, timeout=timeout, message=f"{name} being deleted")
    return result


async def settled(ctl: TTLAfterFinishedController, since: int, name: str) -> None:
    """The controller has reconciled the Job since `since` reconciles and parked it for later."""
    request = Request(NS, name)

    def parked() -> bool:
        return ctl.stats.reconciles > since and request not in ctl.queue.processing and ctl.queue.waiting == 1

    await wait_for(parked, message=f"{name} reconciled and waiting")


async def poke(client: ApiClient, name: str) -> None:
    """Any update of the Job brings it back to the controller."""
    await client.patch(JOBS, name, {"metadata": {"labels": {"poked": str(time.monotonic_ns())}}}, NS)


def spy_on_deletes(ctl: TTLAfterFinishedController, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    calls: list[Any] = []
    original: Callable[..., Awaitable[Any]] = ctl.client.delete

    async def recording(*args: Any, **kwargs: Any) -> Any:
        if args[0] == JOBS:
            calls.append((args, kwargs))
        return await original(*args, **kwargs)

    monkeypatch.setattr(ctl.client, "delete", recording)
    return calls


async def test_ttl_zero_deletes_the_job_in_the_foreground_once_it_completes(
    env: TestEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = spy_on_deletes(ttl_controller(env), monkeypatch)
    observed_before = REGISTRY.get_sample_value(METRIC) or 0.0
    created = await create_job(env.client, "zero", 0)

    job = await deleting(env.client, "zero")

    assert "foregroundDeletion" in job["metadata"]["finalizers"]
    [(args, kwargs)] = calls
    assert args[1:] == ("zero", NS)
    assert kwargs == {
        "propagation_policy": "Foreground",
        "preconditions": {"uid": created["metadata"]["uid"]},
    }
    assert (REGISTRY.get_sample_value(METRIC) or 0.0) == observed_before + 1


async def test_a_job_is_deleted_only_once_its_ttl_has_run_out(env: TestEnv) -> None:
    ctl = ttl_controller(env)
    before = ctl.stats.reconciles
    await create_job(env.client, "later", 30)
    await completed(env.client, "later")
    await settled(ctl, before, "later")
    assert "deletionTimestamp" not in (await env.client.get(JOBS, "later", NS))["metadata"]

    ctl.now = lambda: time.time() + 31  # the TTL has run out
    await poke(env.client, "later")

    await deleting(env.client, "later")


async def test_a_ttl_raised_before_it_runs_out_is_honoured(env: TestEnv) -> None:
    ctl = ttl_controller(env)
    before = ctl.stats.reconciles
    await create_job(env.client, "raised", 30)
    await completed(env.client, "raised")
    await settled(ctl, before, "raised")
    await env.client.patch(JOBS, "raised", {"spec": {"ttlSecondsAfterFinished": 3600}}, NS)

    before = ctl.stats.reconciles
    ctl.now = lambda: time.time() + 31  # past the old TTL, well before the new one
    await poke(env.client, "raised")
    await settled(ctl, before, "raised")
    assert "deletionTimestamp" not in (await env.client.get(JOBS, "raised", NS))["metadata"]

    ctl.now = lambda: time.time() + 3601
    await poke(env.client, "raised")

    await deleting(env.client, "raised")


async def test_jobs_without_a_ttl_or_not_finished_are_left_alone(env: TestEnv) -> None:
    ctl = ttl_controller(env)
    ctl.now = lambda: time.time() + 10**6
    await env.client.create(JOBS, job_manifest("kept"), NS)
    running = job_manifest("running", annotations={"kubesim.aiokcm.io/run-seconds": "3600"})
    running["spec"]["ttlSecondsAfterFinished"] = 0
    await env.client.create(JOBS, running, NS)
    await completed(env.client, "kept")
    # A Job that finishes after both were seen: once it is deleted, the two were long looked at.
    await create_job(env.client, "marker", 0)
    await deleting(env.client, "marker")

    for name in ("kept", "running"):
        assert "deletionTimestamp" not in (await env.client.get(JOBS, name, NS))["metadata"], name


@pytest.mark.slow
async def test_a_short_ttl_runs_out_in_real_time(env: TestEnv) -> None:
    await create_job(env.client, "short", 2)
    finished = await completed(env.client, "short")
    assert "deletionTimestamp" not in finished["metadata"]

    job = await deleting(env.client, "short", timeout=10)

    finish = next(c for c in job["status"]["conditions"] if c["type"] == "Complete")["lastTransitionTime"]
    deleted_at = parse_time(job["metadata"]["deletionTimestamp"])
    finished_at = parse_time(finish)
    assert deleted_at is not None and finished_at is not None
    assert deleted_at - finished_at >= 2
