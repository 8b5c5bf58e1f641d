"""What must hold at every event the test's watch sees, and what the cluster must reach at the end.

The state is the test's own copy of the chaos namespace (pods, Jobs, ReplicaSets, Deployments), fed by one
watch per resource. Streams of different resources are not ordered against each other, so the pods as of a
resourceVersion are judged against the ReplicaSet versions up to that same resourceVersion: a bound that a
status lowers (a scale-down that settled) applies once the pod stream has passed it (before then a deletion
the controller already saw may still be on its way to the test), and pods ahead of the ReplicaSet stream are
judged only once that stream has caught up with them (a scale-up they were created for may still be on its
way to the test).

A settled status counts the pods in the controller's cache, not the cluster's: a status written while a pod
the controller created has not reached its cache yet (its expectations wait for it, the status is written
anyway, as upstream's syncReplicaSet does) says `replicas` pods where there are more. Such a status does not
bound the pods: more of the pods judged were created before it than it counts.
"""

from __future__ import annotations

import datetime
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from tests.chaos.replicabound import ReplicaBound, Suspect, rv_of
from tests.chaos.workload import DEPLOYMENT, DEPLOYMENT_REPLICAS, JOB_KINDS, MAX_SURGE, REPLICASET

Obj = dict[str, Any]
INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"


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
class ClusterState:
    pods: dict[str, Obj] = field(default_factory=dict)
    jobs: dict[str, Obj] = field(default_factory=dict)
    replicasets: dict[str, Obj] = field(default_factory=dict)
    deployments: dict[str, Obj] = field(default_factory=dict)
    bounds: dict[str, ReplicaBound] = field(default_factory=dict)
    # pod uid -> the resourceVersion it was created at (its ADDED event), or a lower bound (from a relist)
    created: dict[str, int] = field(default_factory=dict)
    pods_rv: int = 0
    replicasets_rv: int = 0  # how far the ReplicaSet stream has come (its events and lists)
    # the ReplicaSet stream's relists: (before, list rv), versions between them were never seen
    replicaset_gaps: list[tuple[int, int]] = field(default_factory=list)
    suspects: list[Suspect] = field(default_factory=list)
    seen_at: dict[str, float] = field(default_factory=dict)  # a deferred problem: when its pods were seen
    evidence: dict[str, str] = field(
        default_factory=dict
    )  # a problem: what it was judged by (for the report)
    # pods over a settled status that the pods refuted (its controller's cache lagged): not violations,
    # reported with their evidence to show how often it happens
    excused: dict[str, str] = field(default_factory=dict)
    events_checked: int = 0
    judged_late: int = 0  # pod states judged once the ReplicaSet stream had caught up with them

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
        if resource == "replicasets":
            if kind != "DELETED":
                self.bounds.setdefault(uid, ReplicaBound()).observe(obj)
            problems = [] if kind == "DELETED" else self._deployment_surge(obj)
            return problems + self.progress(resource, rv_of(obj))
        if resource == "pods":
            if kind == "DELETED":
                self.created.pop(uid, None)
            else:  # an ADDED event is the creation; a pod never seen before (no event lost) cannot be older
                self.created.setdefault(uid, rv_of(obj) if kind == "ADDED" else 0)
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
        if resource == "replicasets":
            if self.replicasets_rv:
                self.replicaset_gaps.append((self.replicasets_rv, list_rv))
            for obj in objects:
                self.bounds.setdefault(obj["metadata"]["uid"], ReplicaBound()).observe(obj)
            return self.progress(resource, list_rv)
        if resource != "pods":
            return []
        # a pod the stream had not shown was created after the last event seen (a gapless stream shows every
        # creation up to where it is)
        self.created = {
            o["metadata"]["uid"]: self.created.get(o["metadata"]["uid"], self.pods_rv + 1) for o in objects
        }
        self.pods_rv = max(self.pods_rv, list_rv)
        owners = {controller_uid(p) for p in objects}
        return [problem for owner in owners if owner is not None for problem in self._owner_bounds(owner)]

    def progress(self, resource: str, rv: int) -> list[str]:
        """A stream reached `rv` (an event, a list or a bookmark): judge the pods that waited for it."""
        if resource != "replicasets":
            return []
        self.replicasets_rv = max(self.replicasets_rv, rv)
        ready = [s for s in self.suspects if s.pods_rv <= self.replicasets_rv]
        self.suspects = [s for s in self.suspects if s.pods_rv > self.replicasets_rv]
        self.judged_late += len(ready)
        problems = self._judge_all(ready)
        self._forget(min([self.pods_rv, *(s.pods_rv for s in self.suspects)]))
        return problems

    def _forget(self, floor: int) -> None:
        """Drop the ReplicaSet versions no question from `floor` on can reach (all of a deleted one's)."""
        live_now: dict[str, list[int]] = {}
        for pod in self.pods.values():
            owner = controller_uid(pod)
            if owner in self.bounds and is_live(pod):
                live_now.setdefault(owner, []).append(self.created.get(pod["metadata"]["uid"], 0))
        for owner in list(self.bounds):
            waiting = [s.created for s in self.suspects if s.owner == owner]
            if owner not in self.replicasets and owner not in live_now and not waiting:
                del self.bounds[owner]
            else:
                self.bounds[owner].forget_before(floor, [live_now.get(owner, []), *waiting])

    def judge_pending(self) -> list[str]:
        """At the end: the pods still waiting for the ReplicaSet stream, judged with what it brought."""
        ready, self.suspects = self.suspects, []
        self.judged_late += len(ready)
        return self._judge_all(ready)

    def _judge_all(self, suspects: list[Suspect]) -> list[str]:
        return list(dict.fromkeys(p for s in suspects if (p := self._judge(s)) is not None))

    def _judge(self, suspect: Suspect) -> str | None:
        if any(before < suspect.pods_rv < after for before, after in self.replicaset_gaps):
            return None  # the ReplicaSet versions as of these pods were lost in a relist: nothing to judge by
        bound = self.bounds[suspect.owner]
        allowed = bound.at(suspect.pods_rv, suspect.created)
        if len(suspect.live) <= allowed:
            if len(suspect.live) > bound.at(suspect.pods_rv, ()):  # allowed only as a status refuted
                excused = (
                    f"ReplicaSet {suspect.name}: {len(suspect.live)} live pods ({', '.join(suspect.live)})"
                )
                self.seen_at.setdefault(excused, suspect.seen)
                self.excused.setdefault(excused, self._evidence(suspect))
            return None
        problem = (
            f"ReplicaSet {suspect.name}: {len(suspect.live)} live pods, at most {allowed} allowed "
            f"({', '.join(suspect.live)})"
        )
        self.seen_at.setdefault(problem, suspect.seen)
        self.evidence.setdefault(problem, self._evidence(suspect))
        return problem

    def _evidence(self, suspect: Suspect) -> str:
        """What a verdict was judged by: the ReplicaSet (uid) versions rv:replicas (s: settled, s!: settled
        but refuted by the pods judged), the pods judged with the resourceVersion each was created at, and
        the ReplicaSet's pods now (name@rv; deletionTimestamp when being deleted, phase when finished)."""
        bound = self.bounds[suspect.owner]
        versions = ", ".join(
            f"{rv}:{spec}{('s!' if bound.refuted(i, suspect.created) else 's') if settled else ''}"
            for i, (rv, spec, settled) in enumerate(bound.versions)
        )
        judged = ", ".join(f"{n} created@{c}" for n, c in zip(suspect.live, suspect.created, strict=True))
        now = ", ".join(_pod_now(p) for p in self.owned_pods(suspect.owner))
        return (
            f"ReplicaSet uid {suspect.owner}; judged at pods rv {suspect.pods_rv} (ReplicaSet stream at "
            f"{self.replicasets_rv}); versions {versions}; judged {judged}; pods now {now}"
        )

    def _owner_bounds(self, owner: str) -> list[str]:
        pods = self.owned_pods(owner)
        live = [p for p in pods if is_live(p)]
        if owner in self.jobs:
            return job_problems(self.jobs[owner], pods, live)
        if owner not in self.bounds or owner not in self.replicasets:
            return []
        name = self.replicasets[owner]["metadata"]["name"]
        live = sorted(live, key=lambda p: str(p["metadata"]["name"]))
        created = tuple(self.created.get(p["metadata"]["uid"], 0) for p in live)
        names = [p["metadata"]["name"] for p in live]
        suspect = Suspect(owner, name, self.pods_rv, names, time.time(), created)
        if self.pods_rv > self.replicasets_rv:
            # the ReplicaSet versions up to pods_rv are not all here: a scale-up these pods were made for, or
            # a settled scale-down they broke, may still be on its way
            self.suspects.append(suspect)
            return []
        return [p] if (p := self._judge(suspect)) is not None else []

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


def _pod_now(pod: Obj) -> str:
    meta, phase = pod["metadata"], _phase(pod)
    deleting = f" deleting since {meta['deletionTimestamp']}" if meta.get("deletionTimestamp") else ""
    finished = f" {phase}" if phase in ("Succeeded", "Failed") else ""
    return f"{meta['name']}@{rv_of(pod)}{deleting}{finished}"


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
