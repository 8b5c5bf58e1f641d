"""Every request the manager makes is one its generated RBAC allows.

kubesim does not enforce RBAC, so this test does: it records each request of the manager's transport (all
built-in controllers, the Pipeline operator, leader election and Events) while a namespace's Deployment is
rolled out and updated, a Job runs and is cleaned up by its TTL, a Pipeline runs its first step, and the
namespace is deleted; then it checks each request, classified as the API server's RequestInfo (verb,
group, resource, subresource, namespace, name), against the ClusterRoles and the Role `aiokcm rbac` prints for
the same controllers, as the RBAC authorizer would."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from kubesim import KubeSim
from kubesim.faults.rules import RequestInfo, request_info
from manager.cli.plugins import discover
from manager.cli.rbac import ControllerRbac, Identity, rbac_documents
from manager.client.transport import Transport
from manager.testing import run_manager, wait_for
from tests.helpers import run_kubectl

CONFIG = Path(__file__).resolve().parents[2] / "config"
LEASE_NAMESPACE = "kube-system"

WORKLOAD = """
apiVersion: v1
kind: Namespace
metadata: {name: team}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: team}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx:1}]}
---
apiVersion: batch/v1
kind: Job
metadata: {name: quick, namespace: team}
spec:
  ttlSecondsAfterFinished: 0
  template:
    metadata: {annotations: {kubesim.aiokcm.io/run-seconds: "0"}}
    spec: {restartPolicy: Never, containers: [{name: main, image: busybox}]}
---
apiVersion: workflows.aiokcm.io/v1
kind: Pipeline
metadata: {name: flow, namespace: team}
spec:
  steps:
    - name: only
      template:
        spec:
          template:
            metadata: {annotations: {kubesim.aiokcm.io/run-seconds: "0"}}
            spec: {restartPolicy: Never, containers: [{name: main, image: busybox}]}
"""


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[RequestInfo]]:
    """The manager's requests, as the API server classifies them (discovery and /version left out)."""
    seen: list[RequestInfo] = []

    def spy(name: str) -> None:
        original = getattr(Transport, name)

        async def recording(self: Transport, method: str, path: str, *args: Any, **kwargs: Any) -> Any:
            params: Mapping[str, Any] = kwargs.get("params") or {}
            info = request_info(
                method, path.partition("?")[0], {k: str(v).lower() for k, v in params.items()}
            )
            if info is not None:
                seen.append(info)
            return await original(self, method, path, *args, **kwargs)

        monkeypatch.setattr(Transport, name, recording)

    for name in ("request_raw", "request_json", "_open"):
        spy(name)
    yield seen


def allowed(info: RequestInfo, documents: list[dict[str, Any]]) -> bool:
    resource = f"{info.resource}/{info.subresource}" if info.subresource else info.resource
    for document in documents:
        if document["kind"] == "Role" and document["metadata"]["namespace"] != info.namespace:
            continue
        if document["kind"] not in ("ClusterRole", "Role"):
            continue
        for rule in document["rules"]:
            if (
                (info.group in rule["apiGroups"] or "*" in rule["apiGroups"])
                and (resource in rule["resources"] or "*" in rule["resources"])
                and (info.verb in rule["verbs"] or "*" in rule["verbs"])
                and (not rule.get("resourceNames") or info.name in rule["resourceNames"])
            ):
                return True
    return False


async def run_workload(kubectl: Callable[..., Awaitable[str]], workload: Path) -> None:
    """Roll a Deployment out and update it, let a Job's TTL and a Pipeline act, delete the namespace."""
    await kubectl("apply", "-f", str(workload))

    async def settled() -> bool:
        jobs = await kubectl("get", "jobs", "-n", "team", "-o", "name")
        pods = await kubectl("get", "pods", "-n", "team", "-l", "app=web", "-o", "name")
        return "job.batch/quick" not in jobs and "job.batch/flow-only" in jobs and pods.count("pod/") == 2

    await wait_for(settled, 20.0, message="the TTL, Pipeline and ReplicaSet controllers to act")
    await kubectl("set", "image", "-n", "team", "deployment/web", "web=nginx:2")

    async def rolled_out() -> bool:
        return (await kubectl("get", "replicasets", "-n", "team", "-o", "name")).count("replicaset") == 2

    await wait_for(rolled_out, 20.0, message="the Deployment controller to roll out")
    await kubectl("delete", "namespace", "team", "--wait=false")

    async def namespace_gone() -> bool:
        return "namespace/team" not in await kubectl("get", "namespaces", "-o", "name")

    await wait_for(namespace_gone, 30.0, message="the namespace controller to empty and remove team")


@pytest.mark.slow
async def test_every_request_of_the_manager_is_allowed_by_its_generated_rbac(
    recorded: list[RequestInfo], tmp_path: Path
) -> None:
    installed = [c for c in discover() if "= controllers." in c.entry_point]
    classes = [c.cls for c in installed]
    flags = {"leader_elect": True, "leader_elect_resource_namespace": LEASE_NAMESPACE}
    workload = tmp_path / "workload.yaml"
    workload.write_text(WORKLOAD)
    async with KubeSim(port=0, nodes=3) as sim:

        async def kubectl(*args: str) -> str:
            code, out, err = await run_kubectl(sim.kubeconfig, tmp_path, *args)
            assert code == 0, err
            return out

        await kubectl("apply", "-k", str(CONFIG / "crd"))  # served before the Pipeline informer starts

        async def served() -> bool:
            code, _, _ = await run_kubectl(sim.kubeconfig, tmp_path, "get", "pipelines", "-A")
            return code == 0

        await wait_for(served, 10.0, message="the Pipeline CRD to be served")
        async with run_manager(sim.url, *classes, flags=flags, sync_timeout=20.0):
            await run_workload(kubectl, workload)
    enabled = [ControllerRbac(c.name, tuple(c.cls.rbac), c.aliases, c.enabled_by_default) for c in installed]
    documents = rbac_documents(enabled, Identity(lease_namespace=LEASE_NAMESPACE))
    denied = sorted({str(info) for info in recorded if not allowed(info, documents)})
    assert not denied, f"the generated RBAC denies {len(denied)} kinds of request: {denied}"
    verbs = {(info.verb, info.resource, info.subresource) for info in recorded}
    for expected in [
        ("create", "pods", ""),
        ("update", "jobs", "status"),
        ("update", "replicasets", "status"),
        ("update", "deployments", "status"),
        ("create", "replicasets", ""),
        ("delete", "jobs", ""),
        ("create", "jobs", ""),
        ("patch", "pipelines", "status"),
        ("update", "namespaces", "finalize"),
        ("create", "events", ""),
        ("update", "leases", ""),
        ("watch", "pods", ""),
    ]:
        assert expected in verbs, f"the scenario never made {expected}: the check would not cover it"
