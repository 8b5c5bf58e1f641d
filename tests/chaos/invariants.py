"""What must hold at every event the test's watch sees, and what the cluster must reach at the end.

The state is the test's own copy of the chaos namespace (pods, Jobs, ReplicaSets, Deployments), fed by one
watch per resource. Streams of different resources are not ordered against each other, so a bound that a
ReplicaSet's status lowers (a scale-down that settled) applies to pods only once the pod stream has passed
the resourceVersion of that status: before then a pod deletion the controller already saw may still be on
its way to the test.
"""

from __future__ import annotations

import datetime
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from tests.chaos.workload import DEPLOYMENT, DEPLOYMENT_REPLICAS, JOB_KINDS, MAX_SURGE, REPLICASET

Obj = dict[str, Any]
INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"


def rv_of(obj: Obj) -> int:
    return int(obj["metadata"].get("resourceVersion") or 0)


def controller_uid(obj: Obj) -> str | None:
    for ref in obj["metadata"].get("ownerReferences") or []:
        if ref.get("controller"):
            return str(ref["uid"])
    return None


def is_live(pod: Obj) -> bool:
    """Counts against parallelism or replicas: neither finished nor being deleted (upstream lets
    terminating pods exceed both)."""
    terminal = pod.get("status", {}).get("phase") in ("Succeeded", "Failed")
    return not terminal and not pod["metadata"].get("deletionTimestamp")


def completion_index(pod: Obj) -> str | None:
    annotations = pod["metadata"].get("annotations") or {}
    return annotations.get(INDEX_ANNOTATION)


def condition(obj: Obj, kind: str) -> bool:
    return any(
        c.get("type") == kind and c.get("status") == "True"
        for c in obj.get("status", {}).get("conditions") or []
    )


@dataclass
class ReplicaBound:
    """How many live pods a ReplicaSet may have: the most replicas asked for since its last settled scale,
    lowered to a settled scale-down once the pod stream has passed it."""

    allowed: int
    pending: list[tuple[int, int]] = field(default_factory=list)  # (rv of the settled status, replicas)

    def observe(self, rs: Obj) -> None:
        spec = int(rs["spec"].get("replicas", 1))
        status = rs.get("status") or {}
        settled = (
            status.get("observedGeneration", 0) >= rs["metadata"].get("generation", 0)
            and status.get("replicas") == spec
        )
        if spec > self.allowed:
            self.allowed, self.pending = spec, []
            return
        # A later spec also holds once the pod stream passes an earlier settled scale-down: RS events come
        # in order, so every pending settle point is before this one.
        self.pending = [(rv, max(replicas, spec)) for rv, replicas in self.pending]
        if settled and spec < self.allowed:
            self.pending.append((rv_of(rs), spec))

    def at(self, pods_rv: int) -> int:
        while self.pending and self.pending[0][0] <= pods_rv:
            _, self.allowed = self.pending.pop(0)
        return self.allowed


@dataclass
class ClusterState:
    pods: dict[str, Obj] = field(default_factory=dict)
    jobs: dict[str, Obj] = field(default_factory=dict)
    replicasets: dict[str, Obj] = field(default_factory=dict)
    deployments: dict[str, Obj] = field(default_factory=dict)
    bounds: dict[str, ReplicaBound] = field(default_factory=dict)
    pods_rv: int = 0
    events_checked: int = 0

    def table(self, resource: str) -> dict[str, Obj]:
        tables: dict[str, dict[str, Obj]] = {
            "pods": self.pods,
            "jobs": self.jobs,
            "replicasets": self.replicasets,
            "deployments": self.deployments,
        }
        return tables[resource]

    def owned_pods(self, owner_uid: str) -> list[Obj]:
        return [p for p in self.pods.values() if controller_uid(p) == owner_uid]

    def apply(self, resource: str, kind: str, obj: Obj) -> list[str]:
        """Record one watch event and return the invariants it breaks."""
        table = self.table(resource)
        uid = obj["metadata"]["uid"]
        if kind == "DELETED":
            table.pop(uid, None)
        else:
            table[uid] = obj
        self.events_checked += 1
        if resource == "replicasets" and kind != "DELETED":
            self.bounds.setdefault(uid, ReplicaBound(int(obj["spec"].get("replicas", 1)))).observe(obj)
            return self._deployment_surge(obj)
        if resource == "pods":
            self.pods_rv = max(self.pods_rv, rv_of(obj))
            owner = controller_uid(obj)
            if owner is not None and kind != "DELETED":
                return self._owner_bounds(owner)
        return []

    def replace(self, resource: str, objects: list[Obj], list_rv: int) -> list[str]:
        """A relist: the stream broke with events lost, the state jumps to the list (checked as a whole)."""
        table = self.table(resource)
        table.clear()
        table.update({o["metadata"]["uid"]: o for o in objects})
        for obj in objects if resource == "replicasets" else []:
            self.bounds.setdefault(obj["metadata"]["uid"], ReplicaBound(int(obj["spec"].get("replicas", 1))))
            self.bounds[obj["metadata"]["uid"]].observe(obj)
        if resource != "pods":
            return []
        self.pods_rv = max(self.pods_rv, list_rv)
        owners = {controller_uid(p) for p in objects}
        return [problem for owner in owners if owner is not None for problem in self._owner_bounds(owner)]

    def _owner_bounds(self, owner: str) -> list[str]:
        pods = self.owned_pods(owner)
        live = [p for p in pods if is_live(p)]
        if owner in self.jobs:
            return job_problems(self.jobs[owner], pods, live)
        if owner in self.bounds and owner in self.replicasets:
            allowed = self.bounds[owner].at(self.pods_rv)
            if len(live) > allowed:
                name = self.replicasets[owner]["metadata"]["name"]
                return [
                    f"ReplicaSet {name}: {len(live)} live pods, at most {allowed} allowed ({_names(live)})"
                ]
        return []

    def _deployment_surge(self, rs: Obj) -> list[str]:
        deployment_uid = controller_uid(rs)
        if deployment_uid is None:
            return []
        owned = [r for r in self.replicasets.values() if controller_uid(r) == deployment_uid]
        total = sum(int(r["spec"].get("replicas", 0)) for r in owned)
        if total > DEPLOYMENT_REPLICAS + MAX_SURGE:
            return [
                f"Deployment {DEPLOYMENT}: its ReplicaSets ask for {total} replicas, over replicas + maxSurge"
            ]
        return []


def _names(pods: list[Obj]) -> str:
    return ", ".join(sorted(p["metadata"]["name"] for p in pods))


def job_problems(job: Obj, pods: list[Obj], live: list[Obj]) -> list[str]:
    """The per-event Job invariants: parallelism, and one pod per completion index."""
    name, spec = job["metadata"]["name"], job["spec"]
    problems = []
    if len(live) > int(spec.get("parallelism", 1)):
        problems.append(f"Job {name}: {len(live)} live pods over parallelism {spec.get('parallelism')}")
    if spec.get("completionMode") == "Indexed":
        for what, chosen in (("live", live), ("succeeded", [p for p in pods if _phase(p) == "Succeeded"])):
            twice = [i for i, n in Counter(completion_index(p) for p in chosen).items() if n > 1]
            if twice:
                problems.append(f"Job {name}: two {what} pods for index {sorted(map(str, twice))}")
    return problems


def _phase(pod: Obj) -> str:
    return str(pod.get("status", {}).get("phase", ""))


def unfinished(state: ClusterState, skip_jobs: frozenset[str] = frozenset()) -> list[str]:
    """What still differs from the desired end state; empty once everything converged. The Jobs named in
    `skip_jobs` are left out."""
    problems = []
    for uid, job in state.jobs.items():
        if job["metadata"]["name"] not in skip_jobs:
            problems += _job_end(job, state.owned_pods(uid))
    problems += _replicas_end(state)
    return problems


def _rfc3339(value: str) -> float:
    return datetime.datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.UTC).timestamp()


def jobs_running_during(state: ClusterState, windows: list[tuple[float, float]]) -> frozenset[str]:
    """The Jobs that existed unfinished during one of the windows (seconds precision, as the API's times)."""
    names = set()
    for job in state.jobs.values():
        created = _rfc3339(job["metadata"]["creationTimestamp"])
        finished = [
            _rfc3339(c["lastTransitionTime"])
            for c in job.get("status", {}).get("conditions") or []
            if c.get("type") in ("Complete", "Failed")
            and c.get("status") == "True"
            and c.get("lastTransitionTime")
        ]
        if any(created <= end and (not finished or finished[0] + 1 >= start) for start, end in windows):
            names.add(job["metadata"]["name"])
    return frozenset(names)


def _job_end(job: Obj, pods: list[Obj]) -> list[str]:
    name, kind = job["metadata"]["name"], job["metadata"]["labels"]["chaos/kind"]
    completions = JOB_KINDS[kind][1]
    live = [p for p in pods if is_live(p)]
    if live:
        return [f"Job {name}: {len(live)} pods still live"]
    if kind == "doomed":
        return [] if condition(job, "Failed") else [f"Job {name}: not Failed"]
    succeeded = [p for p in pods if _phase(p) == "Succeeded"]
    problems = []
    if not condition(job, "Complete"):
        problems.append(f"Job {name}: not Complete")
    if job.get("status", {}).get("succeeded") != completions:
        problems.append(
            f"Job {name}: status.succeeded {job.get('status', {}).get('succeeded')} != {completions}"
        )
    if len(succeeded) != completions:
        problems.append(f"Job {name}: {len(succeeded)} succeeded pods for {completions} completions")
    if job["spec"].get("completionMode") == "Indexed":
        indexes = sorted(str(completion_index(p)) for p in succeeded)
        if indexes != sorted(str(i) for i in range(completions)):
            problems.append(f"Job {name}: succeeded indexes {indexes}")
    return problems


def _replicas_end(state: ClusterState) -> list[str]:
    problems = []
    for uid, rs in state.replicasets.items():
        live = [p for p in state.owned_pods(uid) if is_live(p)]
        want, status = int(rs["spec"].get("replicas", 1)), rs.get("status") or {}
        ready = status.get("readyReplicas", 0) or 0
        if len(live) != want or ready != want:
            name = rs["metadata"]["name"]
            problems.append(f"ReplicaSet {name}: {len(live)} live, {ready} ready, {want} wanted")
    for deployment in state.deployments.values():
        status, generation = deployment.get("status") or {}, deployment["metadata"].get("generation")
        counts = [status.get(k, 0) for k in ("replicas", "updatedReplicas", "availableReplicas")]
        if status.get("observedGeneration") != generation or counts != [DEPLOYMENT_REPLICAS] * 3:
            observed = status.get("observedGeneration")
            problems.append(f"Deployment {DEPLOYMENT}: status {counts}, observedGeneration {observed}")
    if REPLICASET not in {r["metadata"]["name"] for r in state.replicasets.values()}:
        problems.append(f"ReplicaSet {REPLICASET}: never seen")
    return problems
