"""The fault schedule of one chaos run: a pure function of the seed and the duration.

Faults are of two kinds. Disruptions (an API server pause or restart, a manager kill, a leader pause) stop a
process, so they never overlap: each gets a window of its own, followed by a settling gap. Light faults
(dropped watches, compacted history, error and latency rules for a while) and workload changes (scaling a
ReplicaSet, rolling a Deployment, adding a Job) are drawn independently and may land anywhere.
Only the timing of a run is real: which fault comes when, and with what parameters, is decided here.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

# Leader-election timings of the managers under test (seconds): lease, renew deadline, retry period.
LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 4.0, 3.0, 1.0

DISRUPTIONS = ("pause_apiserver", "restart_apiserver", "kill_manager", "pause_leader")
LIGHT_FAULTS = ("close_watches", "compact", "write_errors", "latency")
WORKLOAD_CHANGES = ("scale_replicaset", "roll_deployment", "add_job")
# (verb, resource) of the writes the managers make: a rule on anything else would never fire
MANAGER_WRITES = (
    ("create", "pods"),
    ("delete", "pods"),
    ("patch", "pods"),  # the Job controller removes its tracking finalizer
    ("update", "jobs.batch/status"),
    ("create", "replicasets.apps"),
    ("update", "replicasets.apps"),  # the Deployment controller scales its ReplicaSets
    ("update", "replicasets.apps/status"),
    ("update", "deployments.apps/status"),
    ("update", "leases.coordination.k8s.io"),  # failed renewals: the leader may give up its lease
    ("create", "*"),
    ("update", "*"),
)


@dataclass(frozen=True)
class Step:
    """One action at `at` seconds after the chaos phase starts."""

    at: float
    action: str
    params: dict[str, Any] = field(default_factory=dict, hash=False, compare=True)

    def describe(self) -> str:
        args = " ".join(f"{k}={v}" for k, v in sorted(self.params.items()))
        return f"{self.at:6.1f}s {self.action} {args}".rstrip()


def _disruption(rng: random.Random, action: str) -> tuple[dict[str, Any], float]:
    """The parameters of a disruption and how long it keeps the cluster disturbed (before settling)."""
    if action == "pause_apiserver":
        seconds = round(rng.uniform(0.5, 2.0), 1)  # shorter than the renew deadline minus a margin
        return {"seconds": seconds}, seconds
    if action == "restart_apiserver":
        return {"hard": rng.random() < 0.5}, 3.0
    if action == "kill_manager":
        return {"target": rng.choice(("leader", "standby"))}, 3.0
    # a leader pause outlasts its lease and the standby's retry period with room to spare, so the standby
    # takes over while the leader is stopped
    seconds = round(LEASE_DURATION + rng.uniform(3.0, 4.0), 1)
    return {"seconds": seconds}, seconds + LEASE_DURATION


def _light_fault(rng: random.Random, action: str) -> dict[str, Any]:
    if action not in ("write_errors", "latency"):
        return {}
    verb, resource = rng.choice(MANAGER_WRITES)
    params: dict[str, Any] = {"verb": verb, "resource": resource, "lasting": round(rng.uniform(1.0, 4.0), 1)}
    if action == "latency":
        return {**params, "seconds": round(rng.uniform(0.05, 0.5), 2)}
    return {**params, "code": rng.choice((500, 429)), "fraction": round(rng.uniform(0.2, 0.6), 2)}


def _workload_change(rng: random.Random, action: str, jobs_added: int, late: bool) -> dict[str, Any]:
    if action == "scale_replicaset":
        return {"name": "rs-scaled", "replicas": rng.randint(0, 6)}
    if action == "roll_deployment":
        return {"name": "web", "revision": rng.randint(1, 1_000_000)}
    # a flaky Job waits out the Job controller's 10 s pod-failure backoff: none near the end
    kinds = ("plain", "indexed", "doomed") if late else ("plain", "indexed", "flaky", "doomed")
    return {"job": jobs_added, "kind": rng.choice(kinds)}


def build_schedule(seed: int, duration: float, *, restart_supported: bool) -> list[Step]:
    """Every step of a run of `duration` seconds, in time order; the same seed gives the same steps."""
    if duration <= 0:
        raise ValueError(f"the chaos duration must be positive, got {duration}")
    rng = random.Random(seed)
    steps: list[Step] = []
    disruptions = [a for a in DISRUPTIONS if restart_supported or a != "restart_apiserver"]
    # disruptions one after another, each with a settling gap after it; every kind once in each round
    at, round_left = rng.uniform(1.0, 3.0), list[str]()
    while at < duration:
        if not round_left:
            round_left = rng.sample(disruptions, len(disruptions))
        action = round_left.pop()
        params, busy = _disruption(rng, action)
        if at + busy > duration:
            break
        steps.append(Step(round(at, 1), action, params))
        at += busy + rng.uniform(1.0, 3.0)
    # light faults: about one every two seconds
    at = rng.uniform(0.5, 2.0)
    while at < duration:
        action = rng.choice(LIGHT_FAULTS)
        steps.append(Step(round(at, 1), action, _light_fault(rng, action)))
        at += rng.uniform(1.0, 3.0)
    # workload changes: about one every three seconds, to the end (convergence finishes what is left)
    at, jobs_added = rng.uniform(0.5, 2.0), 0
    while at < duration:
        action = rng.choice(WORKLOAD_CHANGES)
        params = _workload_change(rng, action, jobs_added, late=at > duration - 10.0)
        steps.append(Step(round(at, 1), action, params))
        jobs_added += action == "add_job"
        at += rng.uniform(1.5, 4.5)
    return sorted(steps, key=lambda s: (s.at, s.action))
