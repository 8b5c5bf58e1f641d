"""Harness of the Pipeline controller's integration tests (no tests here): kubesim with the Pipeline CRD
installed, and the real Manager running the Pipeline controller beside the Job controller and the garbage
collector over HTTP."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from controllers.pipeline import PIPELINES, Pipeline, PipelineController
from kubesim import KubeSim
from manager import CUSTOMRESOURCEDEFINITIONS, ApiClient, NotFound, custom_resource_definition
from manager.client.rest import create_client
from manager.lifecycle.manager import Manager
from manager.testing import record_denials, run_manager, wait_for
from tests.integration.controllers.garbagecollector.harness import QuickGarbageCollector
from tests.integration.controllers.job.harness import FastJobController

NS = "default"
CONTROLLERS = (PipelineController, FastJobController, QuickGarbageCollector)


@dataclass
class Env:
    sim: KubeSim
    client: ApiClient
    manager: Manager


@contextlib.asynccontextmanager
async def pipeline_env(*controllers: Any) -> AsyncIterator[Env]:
    """kubesim with the generated Pipeline CRD, then a manager running `controllers` (the Pipeline and Job
    controllers and the garbage collector by default)."""
    async with KubeSim(port=0, nodes=1, authorization_mode="RBAC") as sim:
        client = await create_client(kubeconfig=sim.kubeconfig)  # kubesim's admin
        denials = record_denials(sim)  # the manager runs as its ServiceAccount with the generated roles
        try:
            await client.create(CUSTOMRESOURCEDEFINITIONS, custom_resource_definition(Pipeline))
            async with run_manager(sim.url, *(controllers or CONTROLLERS), rbac=True) as manager:
                yield Env(sim, client, manager)
            assert not denials, f"kubesim refused the manager: {sorted(set(denials))}"
        finally:
            await client.close()


def step(
    name: str,
    *depends_on: str,
    seconds: float = 0.2,
    exit_code: int = 0,
    backoff_limit: int | None = None,
) -> dict[str, Any]:
    annotations = {"kubesim.aiokcm.io/run-seconds": str(seconds)}
    if exit_code:
        annotations["kubesim.aiokcm.io/exit-code"] = str(exit_code)
    spec: dict[str, Any] = {
        "template": {
            "metadata": {"annotations": annotations},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]},
        }
    }
    if backoff_limit is not None:
        spec["backoffLimit"] = backoff_limit
    body: dict[str, Any] = {"name": name, "template": {"metadata": {"labels": {"team": "ci"}}, "spec": spec}}
    if depends_on:
        body["dependsOn"] = list(depends_on)
    return body


def pipeline(name: str, *steps: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "workflows.aiokcm.io/v1",
        "kind": "Pipeline",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"steps": list(steps)},
    }


async def get_pipeline(client: ApiClient, name: str) -> dict[str, Any]:
    obj: dict[str, Any] = await client.get(PIPELINES, name, NS)
    return obj


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if cond.get("type") == kind:
            return dict(cond)
    return None


async def wait_condition(
    client: ApiClient, name: str, kind: str, status: str, timeout: float = 15
) -> dict[str, Any]:
    async def check() -> dict[str, Any] | None:
        obj = await get_pipeline(client, name)
        cond = condition(obj, kind)
        return obj if cond is not None and cond["status"] == status else None

    return await wait_for(check, timeout=timeout, message=f"{name}: {kind}={status}")


async def absent(client: ApiClient, gvr: Any, name: str) -> bool:
    try:
        await client.get(gvr, name, NS)
    except NotFound:
        return True
    return False
