"""One chaos run from start to end: kubesim and two managers, the workload, the schedule, the checks."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from tests.chaos import workload
from tests.chaos.actions import Chaos
from tests.chaos.invariants import ClusterState, jobs_running_during, unfinished
from tests.chaos.leadership import LeaseTimeline, SocketOwners, WriteAudit, split_brain_windows
from tests.chaos.processes import KubesimProcess, ManagerReplica, kubesim_supports_data_dir
from tests.chaos.schedule import DISRUPTIONS, LEASE_DURATION, Step, build_schedule
from tests.chaos.watcher import ResourceWatch, session, watch_all
from tests.helpers import wait_for

CONVERGE_TIMEOUT = 60.0
MONITOR_PERIOD = 0.2
WATCHED = {
    "pods": "/api/v1/namespaces/chaos/pods",
    "jobs": "/apis/batch/v1/namespaces/chaos/jobs",
    "replicasets": "/apis/apps/v1/namespaces/chaos/replicasets",
    "deployments": "/apis/apps/v1/namespaces/chaos/deployments",
}
LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"


@dataclass
class ChaosResult:
    seed: int
    steps: list[Step]
    violations: list[str] = field(default_factory=list)  # per-event invariants broken, first of each
    # those broken while a replica that was not the leader wrote too: consequences of the stale writes
    split_brain_violations: list[str] = field(default_factory=list)
    # Jobs that ran while a stale replica wrote, and did not end as asked (duplicate pods cannot be undone)
    split_brain_unfinished: list[str] = field(default_factory=list)
    unfinished: list[str] = field(default_factory=list)  # what had not converged by the timeout
    # ReplicaSets over a settled status written from a lagging cache (allowed; with what they were judged by)
    lagging_status: list[str] = field(default_factory=list)
    non_leader_writes: list[str] = field(default_factory=list)
    attributed_writes: int = 0
    unattributed_writes: int = 0
    leaders: list[str] = field(default_factory=list)
    events_checked: int = 0
    judged_late: int = 0  # pods seen ahead of the ReplicaSet stream, judged once it caught up
    relists: int = 0
    manager_exits: list[int] = field(default_factory=list)
    converge_seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return (
            f"chaos seed {self.seed}: {len(self.steps)} steps, {self.events_checked} events checked "
            f"({self.judged_late} judged late), "
            f"{self.relists} relists, {len(self.violations)} invariant violations "
            f"(+{len(self.split_brain_violations)} in split brain), "
            f"{len(self.lagging_status)} ReplicaSet pod counts allowed over a status from a lagging cache, "
            f"{len(self.split_brain_unfinished)} problems of Jobs that ran in split brain, "
            f"{self.attributed_writes} manager writes attributed ({self.unattributed_writes} not), "
            f"{len(self.non_leader_writes)} from a non-leader, leaders {len(self.leaders)}, "
            f"manager exits {self.manager_exits}, converged in {self.converge_seconds:.1f}s"
        )


class ChaosRun:
    def __init__(self, seed: int, duration: float, workdir: Path) -> None:
        self.seed, self.duration, self.workdir = seed, duration, workdir
        self.state = ClusterState()
        self.timeline = LeaseTimeline(LEASE_DURATION)
        self.violations: dict[str, float] = {}
        self.started = time.time()
        # times are reported on the schedule's clock: seconds since the faults started (kubesim, the
        # workload and the first election take a few seconds before)
        self.faults_started = self.started

    def _record(self, problems: list[str]) -> None:
        for problem in problems:  # a problem judged late is dated when its pods were seen
            self.violations.setdefault(problem, self.state.seen_at.get(problem, time.time()))

    def _on_event(self, resource: str) -> Any:
        def record(kind: str, obj: dict[str, Any]) -> None:
            self._record(self.state.apply(resource, kind, obj))

        return record

    def _on_leases(self, leases: list[dict[str, Any]], rv: int) -> None:
        for lease in leases:
            self.timeline.observe(lease)

    def _on_list(self, resource: str) -> Any:
        def record(objects: list[dict[str, Any]], rv: int) -> None:
            self._record(self.state.replace(resource, objects, rv))

        return record

    async def run(self) -> ChaosResult:
        durable = kubesim_supports_data_dir()
        steps = build_schedule(self.seed, self.duration, restart_supported=durable)
        result = ChaosResult(self.seed, steps)
        if not durable:
            result.notes.append("kubesim has no --data-dir: API server restarts are skipped")
        print(f"\nchaos seed {self.seed} ({self.duration:.0f}s); replay with --chaos-seed {self.seed}")
        for note in result.notes:
            print(f"note: {note}")
        kubesim = KubesimProcess(self.workdir, self.seed, durable)
        await kubesim.start()
        managers = [ManagerReplica(slot, self.workdir, kubesim.url) for slot in ("a", "b")]
        async with session() as http:
            chaos = Chaos(kubesim, managers, http, self.timeline)
            watches = [
                ResourceWatch(http, kubesim.url + path, self._on_event(name), self._on_list(name))
                for name, path in WATCHED.items()
            ]
            lease_watch = ResourceWatch(
                http, kubesim.url + LEASES, lambda kind, lease: self.timeline.observe(lease), self._on_leases
            )
            audit = WriteAudit(kubesim.audit_path, SocketOwners(kubesim.port))
            tasks = await watch_all([*watches, lease_watch])
            monitor = asyncio.create_task(self._monitor(chaos, audit))
            try:
                await self._prepare(chaos)
                await self._chaos(chaos, steps)
                await self._converge(chaos, result, audit)
                await self._judge_pending(chaos)
                self._attribute(chaos, audit)  # the last lines, while every manager's sockets are there
            finally:
                for task in [*tasks, monitor]:
                    task.cancel()
                await asyncio.gather(*tasks, monitor, return_exceptions=True)
                for manager in managers:
                    await manager.stop()
                await kubesim.stop()
        audit.poll([], final=True)
        stale = audit.stale_writes(self.timeline)
        result.non_leader_writes = [f"{at - self.faults_started:6.1f}s {what}" for at, what in stale]
        windows = split_brain_windows([at for at, _ in stale])
        for problem, at in self.violations.items():
            line = f"{at - self.faults_started:6.1f}s {problem}"
            if problem in self.state.evidence:  # what a rare verdict was judged by, to tell a race from a bug
                line += f"\n         {self.state.evidence[problem]}; leader {self.timeline.leader_then(at)}"
            in_split_brain = any(start <= at <= end for start, end in windows)
            (result.split_brain_violations if in_split_brain else result.violations).append(line)
        for excused, evidence in self.state.excused.items():
            at = self.state.seen_at.get(excused, self.faults_started)
            leader = self.timeline.leader_then(at)
            result.lagging_status.append(
                f"{at - self.faults_started:6.1f}s {excused}\n         {evidence}; leader {leader}"
            )
        result.attributed_writes, result.unattributed_writes = len(audit.attributed), len(audit.unattributed)
        result.leaders = self.timeline.holders()
        result.events_checked = self.state.events_checked
        result.judged_late = self.state.judged_late
        result.relists = sum(w.relists for w in [*watches, lease_watch])
        result.manager_exits = [code for m in managers for code in m.exits]
        print(result.summary())
        for line in result.lagging_status:
            print(f"allowed: {line}")
        self._keep(result, audit)
        return result

    def _keep(self, result: ChaosResult, audit: WriteAudit) -> None:
        """For a post-mortem: the result and every manager write with its author, beside the logs."""
        (self.workdir / "result.json").write_bytes(
            orjson.dumps(dataclasses.asdict(result), default=str, option=orjson.OPT_INDENT_2)
        )
        with (self.workdir / "writes.jsonl").open("wb") as out:
            for identity, write in audit.attributed:
                out.write(orjson.dumps({"identity": identity, **dataclasses.asdict(write)}) + b"\n")
        print(f"chaos logs, audit log and result in {self.workdir}")

    async def _monitor(self, chaos: Chaos, audit: WriteAudit) -> None:
        """Every MONITOR_PERIOD: attribute new audit lines, restart a manager that exited, expire rules."""
        while True:
            for manager in chaos.managers:
                if not manager.paused and manager.restart_if_exited():
                    chaos.note(f"manager {manager.slot} exited ({manager.exits[-1]}): started again")
            self._attribute(chaos, audit)
            await chaos.expire_faults()
            await asyncio.sleep(MONITOR_PERIOD)

    def _attribute(self, chaos: Chaos, audit: WriteAudit) -> None:
        for manager in chaos.managers:
            if manager.identity is not None:  # read from its log once it is there
                audit.identity_of_pid.update(manager.identities)
        audit.poll([m.pid for m in chaos.managers if m.pid is not None])

    async def _prepare(self, chaos: Chaos) -> None:
        await chaos.request("POST", "/api/v1/namespaces", workload.namespace())
        for number, kind in enumerate(workload.INITIAL_JOBS):
            await chaos.create("jobs", workload.job(f"initial-{number}-{kind}", kind))
        await chaos.create("replicasets", workload.replicaset(3))
        await chaos.create("deployments", workload.deployment())
        for manager in chaos.managers:
            manager.start()
        leader = await wait_for(chaos.leader, timeout=60, interval=0.1, message="a manager to lead")
        chaos.note(f"chaos: manager {leader.slot} leads; faults start")

    async def _chaos(self, chaos: Chaos, steps: list[Step]) -> None:
        start, self.faults_started = time.monotonic(), time.time()
        disruption: asyncio.Task[None] | None = None
        for step in steps:
            await asyncio.sleep(max(0.0, start + step.at - time.monotonic()))  # the schedule's time
            if step.action in DISRUPTIONS:
                if disruption is not None:
                    await disruption  # never two at once, even when an earlier one ran late
                disruption = asyncio.create_task(chaos.run(step))
            else:
                await chaos.run(step)
        await asyncio.sleep(max(0.0, start + self.duration - time.monotonic()))
        if disruption is not None:
            await disruption

    async def _judge_pending(self, chaos: Chaos) -> None:
        """Pods seen ahead of the ReplicaSet stream wait for it to pass them; when all is quiet, a write to a
        ReplicaSet moves it past every pod event seen."""
        if self.state.suspects:
            await chaos.patch("replicasets", workload.REPLICASET, workload.progress_patch())
            with contextlib.suppress(AssertionError):
                await wait_for(lambda: not self.state.suspects, timeout=10, interval=0.1)
        self._record(self.state.judge_pending())

    def _split_brain_jobs(self, audit: WriteAudit) -> frozenset[str]:
        windows = split_brain_windows([at for at, _ in audit.stale_writes(self.timeline)])
        return jobs_running_during(self.state, windows)

    async def _converge(self, chaos: Chaos, result: ChaosResult, audit: WriteAudit) -> None:
        await chaos.clear_faults()
        for manager in chaos.managers:
            manager.resume()
        chaos.note("chaos: faults off, waiting for convergence")
        start = time.monotonic()

        # A Job that two replicas drove at once may never end as asked: it is judged with the stale writes
        # (asked again each time: a leader resumed just before may still be writing)
        def left() -> list[str]:
            return unfinished(self.state, self._split_brain_jobs(audit))

        try:
            await wait_for(lambda: not left(), timeout=CONVERGE_TIMEOUT, interval=0.2)
        except AssertionError:
            result.unfinished = left()
        result.converge_seconds = time.monotonic() - start
        result.split_brain_unfinished = [p for p in unfinished(self.state) if p not in result.unfinished]
