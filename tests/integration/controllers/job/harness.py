"""Harness of the Job integration tests (no tests here): the real Manager and runtime running only the Job
controller (a subclass with short timings) against kubesim over HTTP, a separate client for the test, and a
pod watch that records every pod UID ever created."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

from controllers.job import JobController
from kubesim import KubeSim
from manager import EVENTS, JOBS, PODS, ApiClient
from manager.client.rest import create_client
from manager.lifecycle.manager import Manager
from manager.testing import controller_of, record_denials, run_manager
from tests.helpers import wait_for

NS = "default"


class FastJobController(JobController):
    """Upstream behaviour with short timings: 50 ms batching, 0.4 s pod-failure backoff base."""

    sync_batch_period: ClassVar[float] = 0.05
    pod_failure_backoff: ClassVar[float] = 0.4
    max_pod_failure_backoff: ClassVar[float] = 3.0


def job_manifest(
    name: str,
    *,
    completions: int | None = 1,
    parallelism: int | None = 1,
    annotations: dict[str, str] | None = None,
    restart_policy: str = "Never",
    **spec: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "template": {
            "metadata": {"annotations": {"kubesim.aiokcm.io/run-seconds": "0.2", **(annotations or {})}},
            "spec": {"restartPolicy": restart_policy, "containers": [{"name": "main", "image": "busybox"}]},
        },
        **spec,
    }
    if completions is not None:
        body["completions"] = completions
    if parallelism is not None:
        body["parallelism"] = parallelism
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NS},
        "spec": body,
    }


@dataclass
class Env:
    sim: KubeSim
    client: ApiClient
    manager: Manager
    ctl: JobController
    pods_seen: dict[str, set[str]] = field(default_factory=dict)  # job name → pod UIDs ever seen

    async def create(self, name: str, **kw: Any) -> dict[str, Any]:
        return await self.client.create(JOBS, job_manifest(name, **kw), NS)

    async def job(self, name: str) -> dict[str, Any]:
        return await self.client.get(JOBS, name, NS)

    async def wait_condition(self, name: str, ctype: str, timeout: float = 15.0) -> dict[str, Any]:
        async def check() -> dict[str, Any] | None:
            job = await self.job(name)
            for cond in (job.get("status") or {}).get("conditions") or ():
                if cond["type"] == ctype and cond["status"] == "True":
                    return job
            return None

        job: dict[str, Any] = await wait_for(check, timeout, interval=0.05, message=f"{name} {ctype}")
        return job

    async def pods(self, name: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = (
            await self.client.list(PODS, NS, label_selector=f"batch.kubernetes.io/job-name={name}")
        )["items"]
        return items

    def created(self, name: str) -> int:
        return len(self.pods_seen.get(name, ()))

    async def events(self, name: str, reason: str | None = None) -> list[dict[str, Any]]:
        items = (await self.client.list(EVENTS, NS))["items"]
        return [
            e
            for e in items
            if e["involvedObject"].get("kind") == "Job"
            and e["involvedObject"].get("name") == name
            and (reason is None or e["reason"] == reason)
        ]

    async def wait_events(self, name: str, reason: str, count: int = 1, timeout: float = 5.0) -> list[Any]:
        async def check() -> list[Any] | None:
            found = await self.events(name, reason)
            total = sum(int(e.get("count") or 1) for e in found)
            return found if total >= count else None

        result: list[Any] = await wait_for(
            check, timeout, interval=0.05, message=f"{count} {reason} on {name}"
        )
        return result


async def _watch_pods(client: ApiClient, env: Env) -> None:
    """Record every pod UID per Job name (from the job-name label) for the test's whole life."""
    rv = (await client.list(PODS, NS))["metadata"]["resourceVersion"]
    async for event_type, obj in client.watch(PODS, NS, resource_version=rv):
        if event_type not in ("ADDED", "MODIFIED", "DELETED"):
            continue
        labels = obj.get("metadata", {}).get("labels") or {}
        job = labels.get("batch.kubernetes.io/job-name")
        if job:
            env.pods_seen.setdefault(job, set()).add(obj["metadata"]["uid"])


@contextlib.asynccontextmanager
async def start_manager(
    sim: KubeSim, cls: type[JobController] = FastJobController, **settings: Any
) -> AsyncIterator[tuple[Manager, JobController]]:
    """The real Manager with only `cls` (manager.testing.run_manager), and its running Job controller."""
    rbac = sim.authorization_mode == "RBAC"
    denials = record_denials(sim) if rbac else []
    async with run_manager(sim.url, cls, flags=settings, rbac=rbac) as manager:
        yield manager, controller_of(manager, JobController)
    assert not denials, f"kubesim refused the manager: {sorted(set(denials))}"


@contextlib.asynccontextmanager
async def running(
    sim: KubeSim, cls: type[JobController] = FastJobController, **settings: Any
) -> AsyncIterator[Env]:
    client = await create_client(kubeconfig=sim.kubeconfig, qps=0)  # kubesim's admin
    watcher: asyncio.Task[None] | None = None
    try:
        async with start_manager(sim, cls, **settings) as (manager, ctl):
            env = Env(sim, client, manager, ctl)
            watcher = asyncio.create_task(_watch_pods(client, env))
            yield env
    finally:
        if watcher is not None:
            watcher.cancel()
            with contextlib.suppress(BaseException):
                await watcher
        await client.close()


def condition(job: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    for cond in (job.get("status") or {}).get("conditions") or ():
        if cond["type"] == ctype:
            found: dict[str, Any] = cond
            return found
    return None
