"""Harness of the CronJob controller's integration tests (no tests here): kubesim, the Job and CronJob
controllers over HTTP, and a controllable clock for the CronJob controller, so a schedule time comes at once
instead of in a real minute."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from controllers.cronjob import CronJobController
from manager import CRONJOBS, EVENTS, JOBS, ApiClient, Request
from manager.testing import TestEnv, run_controllers, wait_for
from tests.integration.controllers.job.harness import FastJobController

NS = "default"
HOUR = 3600.0


class Clock:
    """Real time plus an offset the test moves forward."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset


def cronjob(
    name: str,
    schedule: str = "0 * * * *",
    *,
    run_seconds: float = 0.2,
    exit_code: int = 0,
    **spec: Any,
) -> dict[str, Any]:
    annotations = {"kubesim.aiokcm.io/run-seconds": str(run_seconds)}
    if exit_code:
        annotations["kubesim.aiokcm.io/exit-code"] = str(exit_code)
    pod = {
        "metadata": {"annotations": annotations},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]},
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "schedule": schedule,
            "jobTemplate": {
                "metadata": {"labels": {"team": "batch"}, "annotations": {"note": "from-template"}},
                "spec": {"backoffLimit": 0, "template": pod},
            },
            **spec,
        },
    }


@dataclass
class CronEnv:
    env: TestEnv
    clock: Clock

    @property
    def client(self) -> ApiClient:
        return self.env.client

    @property
    def ctl(self) -> CronJobController:
        return self.env.controller(CronJobController)

    async def create(self, body: dict[str, Any]) -> dict[str, Any]:
        created: dict[str, Any] = await self.client.create(CRONJOBS, body, NS)
        return created

    async def get(self, name: str) -> dict[str, Any]:
        got: dict[str, Any] = await self.client.get(CRONJOBS, name, NS)
        return got

    async def cached(self, name: str) -> dict[str, Any]:
        """The controller's cached copy of a CronJob, once its informer has it."""

        def present() -> dict[str, Any] | None:
            return self.ctl.cronjobs.get_by_key(f"{NS}/{name}")

        return await wait_for(present, 10.0, message=f"{name} in the controller's cache")

    def tick(self, seconds: float, *names: str) -> None:
        """Move the controller's clock forward and have it look at `names` now (where the real queue would
        have woken them at their schedule time)."""
        self.clock.offset += seconds
        for name in names:
            self.ctl.queue.add(Request(NS, name))

    def set_time(self, when: float, *names: str) -> None:
        """Set the controller's clock to `when` (Unix seconds) and have it look at `names` now."""
        self.tick(when - self.clock(), *names)

    def next_run(self, *names: str, minute: int = 0) -> None:
        """Set the controller's clock one second past the next time the hour reaches `minute` (the schedules
        here are hourly) and have it look at `names`: an hour from the run after it, so real time passing
        while the test waits cannot make a second run due."""
        offset = minute * 60
        self.set_time((self.clock() - offset) // HOUR * HOUR + HOUR + offset + 1, *names)

    def next_hour(self) -> float:
        """The first whole hour after the controller's current time."""
        return (self.clock() // HOUR + 1) * HOUR

    async def jobs(self, cronjob_name: str) -> list[dict[str, Any]]:
        items = (await self.client.list(JOBS, NS))["items"]
        owned = []
        for job in items:
            refs = job["metadata"].get("ownerReferences") or []
            if any(r.get("kind") == "CronJob" and r.get("name") == cronjob_name for r in refs):
                owned.append(job)
        return sorted(owned, key=lambda j: j["metadata"]["name"])

    async def job_names(self, cronjob_name: str) -> list[str]:
        return [j["metadata"]["name"] for j in await self.jobs(cronjob_name)]

    async def wait_jobs(self, cronjob_name: str, count: int, timeout: float = 10.0) -> list[dict[str, Any]]:
        async def enough() -> bool:
            return len(await self.jobs(cronjob_name)) == count

        await wait_for(enough, timeout, message=f"{count} Jobs of {cronjob_name}")
        return await self.jobs(cronjob_name)

    async def reasons(self, name: str) -> list[str]:
        items = (await self.client.list(EVENTS, NS))["items"]
        return [e["reason"] for e in items if (e.get("involvedObject") or {}).get("name") == name]

    async def wait_event(self, name: str, reason: str, timeout: float = 10.0) -> None:
        async def seen() -> bool:
            return reason in await self.reasons(name)

        await wait_for(seen, timeout, message=f"event {reason} on {name}")

    async def wait_status(self, name: str, predicate: Any, timeout: float = 10.0) -> dict[str, Any]:
        async def holds() -> bool:
            return bool(predicate((await self.get(name)).get("status") or {}))

        await wait_for(holds, timeout, message=f"the status of {name}")
        return await self.get(name)


@contextlib.asynccontextmanager
async def running(**flags: Any) -> AsyncIterator[CronEnv]:
    async with run_controllers(FastJobController, CronJobController, flags=flags or None, nodes=1) as env:
        clock = Clock()
        env.controller(CronJobController).now = clock
        yield CronEnv(env, clock)


def active_names(status: dict[str, Any]) -> list[str]:
    return sorted(ref["name"] for ref in status.get("active") or ())
