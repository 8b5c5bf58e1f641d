"""Harness of the namespace controller's integration tests (no tests here): the controller with short
timings, the manifests, reading conditions, and kubectl run without blocking the event loop (the manager
under test runs on it)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, ClassVar

from controllers.namespace import NamespaceController
from manager import CONFIGMAPS, NAMESPACES, PODS, ApiClient, GroupVersionResource, NotFound
from manager.testing import wait_for
from tests.helpers import run_kubectl, schemaless_crd

KUBECTL = shutil.which("kubectl")
WIDGETS: GroupVersionResource = GroupVersionResource("example.aiokcm.io", "v1", "widgets", "Widget")


class FastNamespaceController(NamespaceController):
    """Upstream behaviour with short timings: 50 ms before a deleted namespace is looked at, 1 s for
    content held by finalizers."""

    deletion_grace_period: ClassVar[float] = 0.05
    finalizer_estimate_seconds: ClassVar[int] = 1


def namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def configmap(name: str, namespace: str, finalizers: list[str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if finalizers:
        meta["finalizers"] = finalizers
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": "v"}}


def pod_template(labels: dict[str, str], restart_policy: str, run_seconds: str) -> dict[str, Any]:
    return {
        "metadata": {"labels": labels, "annotations": {"kubesim.aiokcm.io/run-seconds": run_seconds}},
        "spec": {
            "restartPolicy": restart_policy,
            "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "c", "image": "busybox"}],
        },
    }


def replicaset(name: str, namespace: str, replicas: int = 2) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": pod_template(labels, "Always", "3600"),
        },
    }


def job(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"template": pod_template({}, "Never", "3600")},
    }


def widget_crd() -> dict[str, Any]:
    return schemaless_crd("example.aiokcm.io", "Widget")


def conditions(ns: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The namespace's conditions by type."""
    return {c["type"]: c for c in (ns.get("status") or {}).get("conditions") or ()}


async def gone(client: ApiClient, name: str) -> bool:
    try:
        await client.get(NAMESPACES, name)
    except NotFound:
        return True
    return False


async def configmap_names(client: ApiClient, ns: str) -> list[str]:
    return [cm["metadata"]["name"] for cm in (await client.list(CONFIGMAPS, ns))["items"]]


async def kubectl(kubeconfig: str, cache: Path, *args: str, timeout: float = 60.0) -> tuple[int, str]:
    """Run kubectl without blocking the loop; (exit code, stdout and stderr)."""
    assert KUBECTL is not None
    code, out, err = await run_kubectl(kubeconfig, cache, *args, timeout=timeout)
    return code, out + err


async def running_pods(client: ApiClient, ns: str, count: int) -> None:
    async def running() -> bool:
        pods = (await client.list(PODS, ns))["items"]
        return sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Running") >= count

    await wait_for(running, timeout=15, message=f"{count} running pods in {ns}")
