"""Harness of the Deployment integration tests (no tests here): kubesim with the Deployment and ReplicaSet
controllers, manifests, and reads of Deployments, their ReplicaSets, pods and events."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from controllers.deployment import DeploymentController
from controllers.replicaset import ReplicaSetController
from manager import DEPLOYMENTS, EVENTS, PODS, REPLICASETS, ApiClient
from manager.testing import TestEnv, run_controllers
from tests.helpers import wait_for

NS = "default"
Obj = dict[str, Any]
READY_NOW = {"kubesim.aiokcm.io/ready-after-seconds": "0"}
NEVER_READY = {"kubesim.aiokcm.io/ready-after-seconds": "100000"}
REVISION = "deployment.kubernetes.io/revision"


def deployment_manifest(
    name: str,
    replicas: int = 3,
    *,
    image: str = "nginx:1",
    pod_annotations: dict[str, str] | None = None,
    strategy: Obj | None = None,
    **spec: Any,
) -> Obj:
    labels = {"app": name}
    body: Obj = {
        "replicas": replicas,
        "selector": {"matchLabels": labels},
        "template": {
            "metadata": {"labels": labels, "annotations": dict(pod_annotations or READY_NOW)},
            "spec": {"containers": [{"name": "main", "image": image}]},
        },
    }
    if strategy is not None:
        body["strategy"] = strategy
    body.update(spec)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": NS},
        "spec": body,
    }


def rolling(max_surge: int | str, max_unavailable: int | str) -> Obj:
    return {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": max_surge, "maxUnavailable": max_unavailable},
    }


@contextlib.asynccontextmanager
async def cluster(**kubesim_options: Any) -> AsyncIterator[TestEnv]:
    kubesim_options.setdefault("nodes", 2)
    async with run_controllers(DeploymentController, ReplicaSetController, **kubesim_options) as env:
        yield env


async def get(client: ApiClient, name: str) -> Obj:
    return await client.get(DEPLOYMENTS, name, NS)


async def replicasets(client: ApiClient, name: str) -> list[Obj]:
    """The Deployment's ReplicaSets (by controller reference), lowest revision first."""
    d = await get(client, name)
    items = (await client.list(REPLICASETS, NS))["items"]
    owned = [
        rs
        for rs in items
        if any(r.get("uid") == d["metadata"]["uid"] for r in rs["metadata"].get("ownerReferences") or ())
    ]
    return sorted(owned, key=lambda rs: int((rs["metadata"].get("annotations") or {}).get(REVISION, "0")))


async def pods(client: ApiClient, app: str) -> list[Obj]:
    return list((await client.list(PODS, NS, label_selector=f"app={app}"))["items"])


async def events(client: ApiClient, name: str, reason: str | None = None) -> list[Obj]:
    items = (await client.list(EVENTS, NS))["items"]
    return [
        e
        for e in items
        if e["involvedObject"].get("name") == name
        and e["involvedObject"].get("kind") == "Deployment"
        and (reason is None or e.get("reason") == reason)
    ]


def condition(d: Obj, kind: str) -> Obj | None:
    for c in (d.get("status") or {}).get("conditions") or ():
        if c["type"] == kind:
            cond: Obj = c
            return cond
    return None


def rolled_out(d: Obj) -> bool:
    """kubectl rollout status's success test."""
    spec, status = d["spec"], d.get("status") or {}
    replicas = spec.get("replicas", 1)
    return bool(
        d["metadata"].get("generation", 0) <= status.get("observedGeneration", 0)
        and status.get("updatedReplicas", 0) == replicas
        and status.get("replicas", 0) == replicas
        and status.get("availableReplicas", 0) == replicas
    )


async def wait_rolled_out(client: ApiClient, name: str, timeout: float = 20.0) -> Obj:
    async def done() -> Obj | None:
        d = await get(client, name)
        return d if rolled_out(d) else None

    return await wait_for(done, timeout, message=f"deployment {name} rolled out")


async def set_image(client: ApiClient, name: str, image: str) -> Obj:
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "main", "image": image}]}}}}
    return await client.patch(DEPLOYMENTS, name, patch, NS, patch_type="strategic")
