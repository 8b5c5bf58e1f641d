"""Which pod a scale-down deletes, end to end: one scenario per ranking rule.

kubesim runs without its kubelet, so each pod's node, phase, readiness, restart counts and ready time are
exactly what the test writes through the status subresource; the controller's clock is pinned. The
ReplicaSet adopts the prepared pods, then scales down one replica at a time; the order of deletion is
compared with the expected one.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import pytest

from controllers.common.podutil import parse_time
from manager import PODS, REPLICASETS, format_time
from tests.helpers import wait_for
from tests.integration.controllers.replicaset.harness import NS, Env, rs_manifest, running_manager

DEPLOYMENT_OWNER = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "name": "owner",
    "uid": "6f1c3a52-0000-4000-8000-000000000001",
    "controller": True,
    "blockOwnerDeletion": True,
}


@dataclass
class PodState:
    name: str
    node: str = "node-a"
    phase: str = "Running"
    ready: bool = True
    ready_ago: float = 1000.0  # seconds before the pinned clock
    restarts: int = 0
    cost: str | None = None


async def make_pod(env: Env, app: str, state: PodState, now: float) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": state.name, "labels": {"app": app}}
    if state.cost is not None:
        metadata["annotations"] = {"controller.kubernetes.io/pod-deletion-cost": state.cost}
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "nginx"}]}
    if state.node:
        spec["nodeName"] = state.node
    pod = await env.client.create(PODS, {"metadata": metadata, "spec": spec}, NS)
    ready = {"type": "Ready", "status": "True" if state.ready else "False"}
    ready["lastTransitionTime"] = format_time(now - state.ready_ago)
    pod["status"] = {
        "phase": state.phase,
        "conditions": [ready],
        "containerStatuses": [
            {
                "name": "main",
                "image": "nginx",
                "imageID": "",
                "ready": state.ready,
                "restartCount": state.restarts,
                "state": {"running": {"startedAt": format_time(now - 2000)}},
            }
        ],
    }
    updated: dict[str, Any] = await env.client.update_status(PODS, pod)
    return updated


async def wait_cache_current(env: Env, pods: list[dict[str, Any]]) -> None:
    """Until the controller's cache holds exactly these versions of the pods."""

    def current() -> bool:
        for pod in pods:
            cached = env.ctl.pods.indexer.get(NS, pod["metadata"]["name"])
            if cached is None or cached["metadata"]["resourceVersion"] != pod["metadata"]["resourceVersion"]:
                return False
        return True

    await wait_for(current, 5.0, message="pods cached")


async def deletion_order(
    env: Env, app: str, pods: list[dict[str, Any]], now: float, owner: dict[str, Any] | None = None
) -> list[str]:
    """Adopt `pods` into a new ReplicaSet, then scale it down to 1 one step at a time."""
    await wait_cache_current(env, pods)
    await env.client.create(REPLICASETS, rs_manifest(app, len(pods), owner=owner), NS)
    rs_uid = (await env.rs(app))["metadata"]["uid"]

    async def all_adopted() -> bool:
        found = await env.pods(app)
        return len(found) == len(pods) and all(
            any(r.get("uid") == rs_uid for r in p["metadata"].get("ownerReferences") or ()) for p in found
        )

    await wait_for(all_adopted, 5.0, message="pods adopted")
    env.ctl.now = lambda: now
    order: list[str] = []
    remaining = {p["metadata"]["name"] for p in pods}
    for replicas in range(len(pods) - 1, 0, -1):
        await env.scale(app, replicas)

        async def one_more_gone(replicas: int = replicas) -> set[str] | None:
            alive = await env.pod_names(app)  # terminating pods excluded
            return alive if len(alive) == replicas else None

        alive = await wait_for(one_more_gone, 5.0, message=f"{app} scaled to {replicas}")
        gone = remaining - alive
        assert len(gone) == 1, f"exactly one pod deleted per step, got {gone}"
        order.extend(gone)
        remaining = alive
    return order


SCENARIOS: list[tuple[str, list[PodState], list[str]]] = [
    (
        "unassigned before assigned",
        [PodState("a", phase="Pending", ready=False), PodState("u", node="", phase="Pending", ready=False)],
        ["u"],
    ),
    (
        "pending before unknown before running",
        [
            PodState("r", phase="Running", ready=False),
            PodState("k", phase="Unknown", ready=False),
            PodState("p", phase="Pending", ready=False),
        ],
        ["p", "k"],
    ),
    ("not ready before ready", [PodState("r"), PodState("n", ready=False)], ["n"]),
    (
        "lower deletion cost first, invalid cost is 0",
        [PodState("hi", cost="100"), PodState("plus", cost="+50"), PodState("lo", cost="-5")],
        ["lo", "plus"],
    ),
    (
        "ready more recently first",
        [PodState("old", ready_ago=3600), PodState("new", ready_ago=5), PodState("mid", ready_ago=100)],
        ["new", "mid"],
    ),
    ("more restarts first", [PodState("calm", restarts=0), PodState("crashy", restarts=5)], ["crashy"]),
]


@pytest.mark.parametrize(("case", "states", "expected"), SCENARIOS, ids=[s[0] for s in SCENARIOS])
async def test_scale_down_order(
    kubesim_factory: Any, case: str, states: list[PodState], expected: list[str]
) -> None:
    sim = await kubesim_factory(kubelet=False)
    async with running_manager(sim) as env:
        now = float(int(time.time()))
        pods = [await make_pod(env, "rank", s, now) for s in states]
        assert await deletion_order(env, "rank", pods, now + 0.5) == expected


async def test_co_located_pods_go_first(kubesim_factory: Any) -> None:
    """Rank = active pods of the ReplicaSets with the same controller owner on that node."""
    sim = await kubesim_factory(kubelet=False)
    async with running_manager(sim) as env:
        now = float(int(time.time()))
        states = [
            PodState("x1", node="node-a", ready_ago=1000, restarts=1),
            PodState("x2", node="node-a", ready_ago=1000),
            PodState("y", node="node-b", ready_ago=10),
        ]
        pods = [await make_pod(env, "colo", s, now) for s in states]
        # Without the rank, y (ready most recently) would go first.
        assert await deletion_order(env, "colo", pods, now + 0.5, owner=DEPLOYMENT_OWNER) == ["x1", "y"]


async def test_same_log_bucket_falls_back_to_uid(kubesim_factory: Any) -> None:
    sim = await kubesim_factory(kubelet=False)
    async with running_manager(sim) as env:
        now = float(int(time.time()))
        # 40 s to 60 s ago all fall in floor(log2(ns)) bucket 35: the UIDs decide, newer ready times and
        # restart counts must not matter.
        states = [PodState(f"p{i}", ready_ago=40 + 5 * i, restarts=i) for i in range(5)]
        pods = [await make_pod(env, "bucket", s, now) for s in states]
        by_uid = [p["metadata"]["name"] for p in sorted(pods, key=lambda p: p["metadata"]["uid"])]
        assert await deletion_order(env, "bucket", pods, now) == by_uid[:4]


async def two_pods_a_second_apart(
    env: Env, app: str, names: tuple[str, str], now: float
) -> list[dict[str, Any]]:
    """Creation timestamps have second precision: wait for the clock to tick between the two creates."""
    first = await make_pod(env, app, PodState(names[0]), now)
    born = parse_time(first["metadata"]["creationTimestamp"]) or 0.0
    await wait_for(lambda: time.time() >= born + 1.05, 2.0, message="the next second")
    second = await make_pod(env, app, PodState(names[1]), now)
    assert (parse_time(second["metadata"]["creationTimestamp"]) or 0.0) > born
    return [first, second]


async def test_creation_time_buckets(kubesim_factory: Any) -> None:
    sim = await kubesim_factory(kubelet=False)
    async with running_manager(sim) as env:
        now = float(int(time.time()))
        old, young = await two_pods_a_second_apart(env, "born", ("old", "young"), now)
        born_young = parse_time(young["metadata"]["creationTimestamp"]) or 0.0
        # 0.6 s vs ≥ 1.6 s old: different buckets, so the younger pod goes first whatever the UIDs.
        assert await deletion_order(env, "born", [old, young], born_young + 0.6) == ["young"]


async def test_same_creation_bucket_falls_back_to_uid(kubesim_factory: Any) -> None:
    sim = await kubesim_factory(kubelet=False)
    async with running_manager(sim) as env:
        now = float(int(time.time()))
        pods = await two_pods_a_second_apart(env, "twins", ("first", "second"), now)
        created = [parse_time(p["metadata"]["creationTimestamp"]) or 0.0 for p in pods]
        lower_uid = min(pods, key=lambda p: p["metadata"]["uid"])["metadata"]["name"]
        # Different creation seconds, but with a clock 1000 s later both ages fall in one log2 bucket.
        assert await deletion_order(env, "twins", pods, max(created) + 1000) == [lower_uid]
