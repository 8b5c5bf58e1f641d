"""Carrying out the schedule's steps: faults through kubesim's /kubesim/faults admin paths, disruptions with
signals to the processes, and workload changes as writes of the test (retried through the faults)."""

from __future__ import annotations

import asyncio
import signal
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import orjson

from tests.chaos import workload
from tests.chaos.leadership import LeaseTimeline
from tests.chaos.processes import KubesimProcess, ManagerReplica
from tests.chaos.schedule import Step

WRITE_DEADLINE = 30.0
NAMESPACED = {
    "jobs": "/apis/batch/v1/namespaces/chaos/jobs",
    "replicasets": "/apis/apps/v1/namespaces/chaos/replicasets",
    "deployments": "/apis/apps/v1/namespaces/chaos/deployments",
}


@dataclass
class Chaos:
    kubesim: KubesimProcess
    managers: list[ManagerReplica]
    session: aiohttp.ClientSession
    timeline: LeaseTimeline
    log: list[str] = field(default_factory=list)
    _clear_at: float = 0.0

    def note(self, message: str) -> None:
        line = f"{time.strftime('%H:%M:%S')} {message}"
        self.log.append(line)
        print(line, flush=True)

    # -- the test's own requests ------------------------------------------------------------------------
    async def request(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> Any:
        """One write of the test, retried through injected errors, pauses and restarts; 409 AlreadyExists
        (a retried create that had been written) counts as done."""
        deadline = time.monotonic() + WRITE_DEADLINE
        data = None if body is None else orjson.dumps(body)
        while True:
            try:
                async with self.session.request(
                    method,
                    self.kubesim.url + path,
                    data=data,
                    headers={"Content-Type": content_type},
                    timeout=aiohttp.ClientTimeout(total=5),
                ) as resp:
                    payload = orjson.loads(await resp.read() or b"null")
                    if resp.status < 300 or (method == "POST" and resp.status == 409):
                        return payload
                    if resp.status not in (429, 500, 503, 504) or time.monotonic() > deadline:
                        raise AssertionError(f"{method} {path}: {resp.status} {payload}")
            except (TimeoutError, aiohttp.ClientError, OSError):
                if time.monotonic() > deadline:
                    raise
            await asyncio.sleep(0.2)  # retry backoff, as any client's

    async def create(self, resource: str, obj: dict[str, Any]) -> None:
        await self.request("POST", NAMESPACED[resource], obj)

    async def patch(self, resource: str, name: str, patch: dict[str, Any]) -> None:
        path = f"{NAMESPACED[resource]}/{name}"
        await self.request("PATCH", path, patch, "application/merge-patch+json")

    async def clear_faults(self) -> None:
        await self.request("DELETE", "/kubesim/faults")

    # -- the steps ----------------------------------------------------------------------------------------
    async def run(self, step: Step) -> None:
        self.note(f"chaos: {step.describe()}")
        await getattr(self, step.action)(**step.params)

    async def close_watches(self) -> None:
        await self.request("POST", "/kubesim/faults/close-watches")

    async def compact(self) -> None:
        await self.request("POST", "/kubesim/faults/compact")

    async def write_errors(self, lasting: float, **rule: Any) -> None:
        await self.request("POST", "/kubesim/faults/errors", {**rule, "retry_after": 1})
        self._clear_later(lasting)

    async def latency(self, lasting: float, **rule: Any) -> None:
        await self.request("POST", "/kubesim/faults/latency", rule)
        self._clear_later(lasting)

    def _clear_later(self, lasting: float) -> None:
        """Rules cannot be removed one by one: all of them go when the latest one's time is up."""
        self._clear_at = max(self._clear_at, time.monotonic() + lasting)

    async def expire_faults(self) -> None:
        if self._clear_at and time.monotonic() >= self._clear_at:
            self._clear_at = 0.0
            await self.clear_faults()

    async def pause_apiserver(self, seconds: float) -> None:
        self.kubesim.signal(signal.SIGSTOP)
        try:
            await asyncio.sleep(seconds)  # the fault itself: the server is stopped this long
        finally:
            self.kubesim.signal(signal.SIGCONT)

    async def restart_apiserver(self, hard: bool) -> None:
        await self.kubesim.stop(hard=hard)
        await self.kubesim.start()

    def leader(self) -> ManagerReplica | None:
        holder = self.timeline.holder
        return next((m for m in self.managers if holder and m.identity == holder), None)

    async def kill_manager(self, target: str) -> None:
        leader = self.leader()
        victim = leader if target == "leader" else next((m for m in self.managers if m is not leader), None)
        if victim is None:
            self.note("chaos: no such manager now, nothing killed")
            return
        victim.kill_and_restart()

    async def pause_leader(self, seconds: float) -> None:
        leader = self.leader()
        if leader is None:
            self.note("chaos: no leader now, nothing paused")
            return
        leader.pause()
        try:
            await asyncio.sleep(seconds)  # the fault itself: the leader is stopped past its lease
        finally:
            leader.resume()

    async def scale_replicaset(self, name: str, replicas: int) -> None:
        await self.patch("replicasets", name, workload.scale_patch(replicas))

    async def roll_deployment(self, name: str, revision: int) -> None:
        await self.patch("deployments", name, workload.rollout_patch(revision))

    async def add_job(self, job: int, kind: str) -> None:
        await self.create("jobs", workload.job(f"added-{job}-{kind}", kind))
