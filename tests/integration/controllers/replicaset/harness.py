"""Harness of the ReplicaSet integration tests (no tests here): the real Manager with its runtime, running
only replicaset-controller against a kubesim over HTTP, and a separate API client for the test itself."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from controllers.replicaset import ReplicaSetController
from kubesim import KubeSim
from manager import EVENTS, PODS, REPLICASETS, ApiClient, NotFound
from manager.client.rest import create_client
from manager.lifecycle.manager import Manager
from manager.testing import controller_of, record_denials, run_manager
from tests.helpers import wait_for

NS = "default"
RUN_FOREVER = {"kubesim.aiokcm.io/ready-after-seconds": "0"}


def rs_manifest(
    name: str,
    replicas: int,
    *,
    annotations: dict[str, str] | None = None,
    min_ready_seconds: int = 0,
    owner: dict[str, Any] | None = None,
    image: str = "nginx",
    extra_template_labels: dict[str, str] | None = None,
    selector: dict[str, Any] | None = None,
) -> dict[str, Any]:
    labels = {"app": name, **(extra_template_labels or {})}
    metadata: dict[str, Any] = {"name": name, "namespace": NS}
    if owner is not None:
        metadata["ownerReferences"] = [owner]
    spec: dict[str, Any] = {
        "replicas": replicas,
        "selector": selector or {"matchLabels": {"app": name}},
        "template": {
            "metadata": {"labels": labels, "annotations": dict(annotations or RUN_FOREVER)},
            "spec": {"containers": [{"name": "main", "image": image}]},
        },
    }
    if min_ready_seconds:
        spec["minReadySeconds"] = min_ready_seconds
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": metadata, "spec": spec}


@dataclass
class Env:
    sim: KubeSim
    client: ApiClient
    manager: Manager
    ctl: ReplicaSetController
    seen_pods: set[str] = field(default_factory=set)

    # ---------------------------------------------------------------- reads
    async def rs(self, name: str) -> dict[str, Any]:
        return await self.client.get(REPLICASETS, name, NS)

    async def pods(self, app: str, *, include_terminating: bool = False) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = (await self.client.list(PODS, NS, label_selector=f"app={app}"))["items"]
        if include_terminating:
            return items
        return [p for p in items if not p["metadata"].get("deletionTimestamp")]

    async def pod_names(self, app: str) -> set[str]:
        return {p["metadata"]["name"] for p in await self.pods(app)}

    async def events(self, name: str, reason: str | None = None) -> list[dict[str, Any]]:
        items = (await self.client.list(EVENTS, NS))["items"]
        return [
            e
            for e in items
            if e["involvedObject"].get("name") == name
            and e["involvedObject"].get("kind") == "ReplicaSet"
            and (reason is None or e["reason"] == reason)
        ]

    # ---------------------------------------------------------------- writes
    async def create_rs(self, name: str, replicas: int, **kw: Any) -> dict[str, Any]:
        return await self.client.create(REPLICASETS, rs_manifest(name, replicas, **kw), NS)

    async def scale(self, name: str, replicas: int) -> None:
        await self.client.patch(REPLICASETS, name, {"spec": {"replicas": replicas}}, NS)

    # ---------------------------------------------------------------- waits
    async def wait_status(self, name: str, timeout: float = 10.0, **expected: int) -> dict[str, Any]:
        async def check() -> dict[str, Any] | None:
            status = (await self.rs(name)).get("status") or {}
            ok = all(int(status.get(k) or 0) == v for k, v in expected.items())
            return status if ok else None

        result: dict[str, Any] = await wait_for(check, timeout, message=f"{name} status {expected}")
        return result

    async def wait_pod_count(self, app: str, count: int, timeout: float = 10.0) -> list[dict[str, Any]]:
        async def check() -> tuple[list[dict[str, Any]]] | None:
            pods = await self.pods(app)
            return (pods,) if len(pods) == count else None

        found: tuple[list[dict[str, Any]]] = await wait_for(check, timeout, message=f"{count} pods of {app}")
        return found[0]

    async def wait_cached(self, namespace: str, name: str) -> None:
        """Until the controller's own pod cache holds the pod (used before creating an adopting RS)."""
        await wait_for(
            lambda: self.ctl.pods.indexer.get(namespace, name) is not None, 5.0, message=f"{name} cached"
        )


@contextlib.asynccontextmanager
async def running_manager(sim: KubeSim, **settings: Any) -> AsyncIterator[Env]:
    """The real Manager with only replicaset-controller (manager.testing.run_manager) and a test client."""
    rbac = sim.authorization_mode == "RBAC"
    denials = record_denials(sim) if rbac else []
    async with run_manager(sim.url, ReplicaSetController, flags=settings, rbac=rbac) as manager:
        client = await create_client(kubeconfig=sim.kubeconfig, qps=0)  # kubesim's admin
        try:
            yield Env(sim, client, manager, controller_of(manager, ReplicaSetController))
        finally:
            await client.close()
    assert not denials, f"kubesim refused the manager: {sorted(set(denials))}"


async def pods_gone(env: Env, app: str, names: set[str]) -> bool:
    """True once none of `names` exists any more (terminating pods still count as existing)."""
    existing = {p["metadata"]["name"] for p in await env.pods(app, include_terminating=True)}
    return not (existing & names)


async def get_or_none(client: ApiClient, name: str) -> dict[str, Any] | None:
    try:
        return await client.get(PODS, name, NS)
    except NotFound:
        return None


async def sync_barrier(env: Env, name: str) -> None:
    """Make the controller sync `name` once more and wait until it has: a spec change it ignores
    (minReadySeconds on a pod-less clock) bumps the generation, and the sync reports observedGeneration."""
    rs = await env.rs(name)
    current = int(rs["spec"].get("minReadySeconds") or 0)
    updated = await env.client.patch(REPLICASETS, name, {"spec": {"minReadySeconds": current + 1}}, NS)
    generation = int(updated["metadata"]["generation"])

    async def observed() -> bool:
        return int((await env.rs(name)).get("status", {}).get("observedGeneration") or 0) >= generation

    await wait_for(observed, 10.0, message=f"{name} observedGeneration {generation}")
