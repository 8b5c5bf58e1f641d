"""Rolling updates within maxSurge/maxUnavailable at every pod event, Recreate without overlap, a resize
mid-rollout split proportionally as upstream, and a paused Deployment."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubesim.storage.records import WatchEvent
from manager import DEPLOYMENTS, PODS, REPLICASETS
from tests.helpers import wait_for
from tests.integration.controllers.deployment.harness import (
    NEVER_READY,
    NS,
    cluster,
    condition,
    deployment_manifest,
    events,
    get,
    replicasets,
    rolling,
    set_image,
    wait_rolled_out,
)

Obj = dict[str, Any]


def _ready(pod: Obj) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or ()
    )


@dataclass
class PodBounds:
    """Checks, at every pod event kubesim commits, the live (non-terminating) pods and the available ones."""

    app: str
    pods: dict[str, Obj] = field(default_factory=dict)
    max_total: int = 0
    min_available: int | None = None
    images: set[frozenset[str]] = field(default_factory=set)

    def __call__(self, event: WatchEvent) -> None:
        pod = event.entry.obj
        if (pod["metadata"].get("labels") or {}).get("app") != self.app:
            return
        name = pod["metadata"]["name"]
        if event.type == "DELETED" or pod["metadata"].get("deletionTimestamp"):
            self.pods.pop(name, None)
        else:
            self.pods[name] = pod
        live = list(self.pods.values())
        available = sum(1 for p in live if _ready(p))
        self.max_total = max(self.max_total, len(live))
        self.min_available = available if self.min_available is None else min(self.min_available, available)
        self.images.add(frozenset(p["spec"]["containers"][0]["image"] for p in live))


async def test_rolling_update_keeps_surge_and_unavailability_bounds_at_every_pod_event() -> None:
    async with cluster(nodes=3) as env:
        pod_timing = {
            "kubesim.aiokcm.io/ready-after-seconds": "0.2",
            "kubesim.aiokcm.io/terminate-seconds": "0.3",
        }
        manifest = deployment_manifest("web", 10, strategy=rolling(3, 2), pod_annotations=pod_timing)
        await env.client.create(DEPLOYMENTS, manifest, NS)
        await wait_rolled_out(env.client, "web")
        bounds = PodBounds("web")
        for pod in (await env.client.list(PODS, NS))["items"]:
            if not pod["metadata"].get("deletionTimestamp"):
                bounds.pods[pod["metadata"]["name"]] = pod
        subscription = env.sim.store.subscribe("pods", bounds)
        try:
            await set_image(env.client, "web", "nginx:2")
            await wait_rolled_out(env.client, "web", timeout=30)
        finally:
            subscription.close()
        assert bounds.max_total <= 13, bounds.max_total
        assert bounds.min_available is not None and bounds.min_available >= 8, bounds.min_available
        assert frozenset({"nginx:1", "nginx:2"}) in bounds.images  # both versions served side by side
        old, new = await replicasets(env.client, "web")
        assert old["spec"]["replicas"] == 0 and new["spec"]["replicas"] == 10
        messages = [e["message"] for e in await events(env.client, "web", "ScalingReplicaSet")]
        new_name = new["metadata"]["name"]
        assert f"Scaled up replica set {new_name} from 0 to 3" in messages
        assert any(
            m.startswith(f"Scaled down replica set {old['metadata']['name']} from 10 to ") for m in messages
        )


async def test_recreate_never_overlaps_old_and_new_pods() -> None:
    async with cluster() as env:
        pod_timing = {
            "kubesim.aiokcm.io/ready-after-seconds": "0",
            "kubesim.aiokcm.io/terminate-seconds": "0.5",
        }
        manifest = deployment_manifest("web", 4, strategy={"type": "Recreate"}, pod_annotations=pod_timing)
        await env.client.create(DEPLOYMENTS, manifest, NS)
        await wait_rolled_out(env.client, "web")
        seen: list[frozenset[str]] = []
        live: dict[str, str] = {}

        def on_pod(event: WatchEvent) -> None:  # every pod that exists, terminating or not
            pod = event.entry.obj
            if event.type == "DELETED":
                live.pop(pod["metadata"]["name"], None)
            else:
                live[pod["metadata"]["name"]] = pod["spec"]["containers"][0]["image"]
            seen.append(frozenset(live.values()))

        subscription = env.sim.store.subscribe("pods", on_pod)
        try:
            await set_image(env.client, "web", "nginx:2")
            await wait_rolled_out(env.client, "web")
        finally:
            subscription.close()
        assert frozenset({"nginx:1", "nginx:2"}) not in seen, (
            "an old pod still existed when a new one appeared"
        )
        assert seen[-1] == frozenset({"nginx:2"})
        assert frozenset() in seen  # everything old had gone before the first new pod


async def test_resize_mid_rollout_splits_proportionally() -> None:
    async with cluster() as env:
        # upstream's e2e example: 10 replicas, surge 3, a rollout stuck with 8 old + 5 new (max-replicas 13),
        # then resized to 30: allowed 33 → 8·33/13 = 20.3 → 20 old, 5·33/13 = 12.7 → 13 new.
        manifest = deployment_manifest("web", 10, strategy=rolling(3, 2))
        await env.client.create(DEPLOYMENTS, manifest, NS)
        await wait_rolled_out(env.client, "web")
        stuck = {
            "spec": {
                "template": {
                    "metadata": {"annotations": NEVER_READY},
                    "spec": {"containers": [{"name": "main", "image": "nginx:2"}]},
                }
            }
        }
        await env.client.patch(DEPLOYMENTS, "web", stuck, NS, patch_type="strategic")

        async def stuck_at_8_plus_5() -> bool:
            rss = await replicasets(env.client, "web")
            return len(rss) == 2 and [rs["spec"]["replicas"] for rs in rss] == [8, 5]

        await wait_for(stuck_at_8_plus_5, 15, message="rollout stuck at 8 old + 5 new")
        await env.client.patch(DEPLOYMENTS, "web", {"spec": {"replicas": 30}}, NS)

        async def split() -> list[int] | None:
            rss = await replicasets(env.client, "web")
            sizes = [rs["spec"]["replicas"] for rs in rss]
            return sizes if sum(sizes) == 33 else None

        assert await wait_for(split, 15, message="resized ReplicaSets") == [20, 13]
        for rs in await replicasets(env.client, "web"):
            annotations = rs["metadata"]["annotations"]
            assert annotations["deployment.kubernetes.io/desired-replicas"] == "30"
            assert annotations["deployment.kubernetes.io/max-replicas"] == "33"


async def test_paused_deployment_only_scales_then_resumes_the_rollout() -> None:
    async with cluster() as env:
        await env.client.create(DEPLOYMENTS, deployment_manifest("web", 2), NS)
        await wait_rolled_out(env.client, "web")
        await env.client.patch(DEPLOYMENTS, "web", {"spec": {"paused": True}}, NS)

        async def paused_condition() -> Obj | None:
            c = condition(await get(env.client, "web"), "Progressing")
            return c if c is not None and c["reason"] == "DeploymentPaused" else None

        c = await wait_for(paused_condition, 10, message="Progressing DeploymentPaused")
        assert c["status"] == "Unknown" and c["message"] == "Deployment is paused"
        await set_image(env.client, "web", "nginx:2")
        await env.client.patch(DEPLOYMENTS, "web", {"spec": {"replicas": 3}}, NS)

        async def scaled() -> bool:
            d = await get(env.client, "web")
            return bool(
                d["status"].get("observedGeneration") == d["metadata"]["generation"]
                and d["status"].get("availableReplicas") == 3
            )

        await wait_for(scaled, 10, message="the paused Deployment scaled to 3")
        (rs,) = await replicasets(env.client, "web")  # no new ReplicaSet while paused
        assert (
            rs["spec"]["replicas"] == 3
            and rs["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1"
        )
        await env.client.patch(DEPLOYMENTS, "web", {"spec": {"paused": False}}, NS)
        d = await wait_rolled_out(env.client, "web")
        assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
        progressing = condition(d, "Progressing")
        assert progressing is not None and progressing["reason"] == "NewReplicaSetAvailable"
        old, new = await replicasets(env.client, "web")
        assert (old["spec"]["replicas"], new["spec"]["replicas"]) == (0, 3)
        assert await env.client.list(REPLICASETS, NS)
