"""A small scenario that exercises every built-in controller, run with the manager as its ServiceAccount bound
to given roles in a kubesim enforcing RBAC and OwnerReferencesPermissionEnforcement (blockOwnerDeletion needs
update on the owner's finalizers). It fails fast: at the first request kubesim refuses the manager, or when
an expected state is not reached in time.

What it does, all at once: a Job whose first pod fails (retried) with ttlSecondsAfterFinished 0 (Job
controller, TTL controller); a Deployment, after adopting and deleting a stray ReplicaSet
(revisionHistoryLimit 0), rolled to a new image, then asked to roll back to a revision gone (Deployment and
ReplicaSet controllers); a CronJob made due twice by moving the controller's injectable clock, its second Job
replacing the first (concurrencyPolicy Replace); a ReplicaSet deleted in the foreground (garbage collector:
its pods go, then its finalizer); a namespace with content deleted, a Service among it (namespace controller);
a one-step Pipeline (Pipeline controller); leader election on; /metrics read on the secure port (delegated
authentication and authorization by the API server); and the flows of adoption.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path
from typing import Any

import aiohttp

from controllers.cronjob import CronJobController
from controllers.deployment import DeploymentController
from controllers.pipeline import PIPELINES, Pipeline, PipelineController
from controllers.replicaset import ReplicaSetController
from controllers.ttlafterfinished import TTLAfterFinishedController
from kubesim import KubeSim
from kubesim.kubeconfig import write_kubeconfig
from manager import (
    CONFIGMAPS,
    CRONJOBS,
    CUSTOMRESOURCEDEFINITIONS,
    DEPLOYMENTS,
    JOBS,
    NAMESPACES,
    PODS,
    REPLICASETS,
    GroupVersionResource,
    Request,
    custom_resource_definition,
)
from manager.cli.rbac import Identity
from manager.cli.sandbox import OWNER_REFERENCES_ADMISSION, admin_session
from manager.cli.sandbox_identity import (
    apply_objects,
    controller_rbac,
    identity_objects,
    manager_identity,
    request_token,
    service_account_user,
)
from manager.client.rest import create_client
from manager.config.settings import Settings
from manager.testing import controller_info, controller_of, record_denials, run_manager, wait_for
from tests.integration.controllers.garbagecollector.harness import QuickGarbageCollector
from tests.integration.controllers.job.harness import FastJobController
from tests.integration.controllers.namespace.harness import FastNamespaceController
from tests.integration.rbac.adoption import (
    job_adopts_trims_and_suspends,
    pipeline_meets_a_foreign_job,
    replicaset_releases_a_relabelled_pod,
    stray_replicaset,
)
from tests.integration.rbac.attribution import hold_controllers_to_their_roles, user_agents_remembered
from tests.integration.rbac.manifests import (
    NS,
    cronjob,
    deployment,
    flaky_job,
    metrics_reader_objects,
    pipeline,
    replicaset,
)
from tests.integration.rbac.run import Run, at_least_one, equals, gone

HOUR = 3600.0
SERVICES = GroupVersionResource("", "v1", "services", "Service")
ROLLBACK_TO = "deprecated.deployment.rollback.to"
FLAGS: dict[str, Any] = {
    "port": None,  # HTTPS with delegated authentication and authorization (TokenReview, SAR)
    "secure_port": 0,
    "leader_elect": True,
    "leader_elect_lease_duration": 15.0,
    "leader_elect_renew_deadline": 10.0,
    "leader_elect_retry_period": 0.2,
}


CONTROLLERS = (
    FastJobController,
    ReplicaSetController,
    DeploymentController,
    CronJobController,
    QuickGarbageCollector,
    FastNamespaceController,
    TTLAfterFinishedController,
    PipelineController,
)


def generated_objects() -> list[dict[str, Any]]:
    """What `aiokcm rbac --controllers <CONTROLLERS>` prints, with the ServiceAccount."""
    infos = [controller_info(c) for c in CONTROLLERS]
    return identity_objects(controller_rbac(infos), manager_identity(Settings()))


async def deployment_rolled(run: Run) -> None:
    client = run.client

    async def available(image: str) -> bool:
        web = await client.get(DEPLOYMENTS, "web", NS)
        status = web.get("status") or {}
        return (
            status.get("observedGeneration") == web["metadata"]["generation"]
            and status.get("updatedReplicas") == 2
            and status.get("availableReplicas") == 2
            and status.get("replicas") == 2
            and web["spec"]["template"]["spec"]["containers"][0]["image"] == image
        )

    async def replicasets() -> int:
        return len((await client.list(REPLICASETS, NS, label_selector="app=web"))["items"])

    await run.until(lambda: available("busybox:1"), "the Deployment available")
    await run.until(lambda: gone(client, REPLICASETS, "web-stray"), "the stray ReplicaSet adopted, deleted")
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "busybox:2"}]}}}}
    await client.patch(DEPLOYMENTS, "web", patch, NS, patch_type="strategic")
    await run.until(lambda: available("busybox:2"), "the Deployment rolled to busybox:2")
    await run.until(lambda: equals(replicasets, 1), "the old ReplicaSet deleted (revisionHistoryLimit 0)")
    # a rollback to the previous revision, which is gone: the controller clears the annotation (update)
    await client.patch(DEPLOYMENTS, "web", {"metadata": {"annotations": {ROLLBACK_TO: "0"}}}, NS)

    async def rollback_cleared() -> bool:
        web = await client.get(DEPLOYMENTS, "web", NS)
        return ROLLBACK_TO not in (web["metadata"].get("annotations") or {})

    await run.until(rollback_cleared, "the rollback annotation cleared")


async def cronjob_ran(run: Run) -> None:
    ctl = controller_of(run.manager, CronJobController)
    await run.until(lambda: ctl.cronjobs.get_by_key(f"{NS}/hourly"), "the CronJob cached")
    next_hour = (time.time() // HOUR + 1) * HOUR
    offset = next_hour - time.time() + 1
    ctl.now = lambda: time.time() + offset
    ctl.queue.add(Request(NS, "hourly"))

    def owned(jobs: list[dict[str, Any]]) -> list[str]:
        refs = [(j["metadata"]["name"], j["metadata"].get("ownerReferences") or ()) for j in jobs]
        return [name for name, owners in refs if any(r.get("name") == "hourly" for r in owners)]

    async def active() -> list[str]:
        status = (await run.client.get(CRONJOBS, "hourly", NS)).get("status") or {}
        names = [ref["name"] for ref in status.get("active") or ()]
        return names if status.get("lastScheduleTime") and names else []

    await run.until(active, "the CronJob's Job and lastScheduleTime")
    first = (await active())[0]
    ctl.now = lambda: time.time() + offset + HOUR  # the next run replaces the first (still running)
    ctl.queue.add(Request(NS, "hourly"))

    async def replaced() -> bool:
        names = await active()
        jobs = owned((await run.client.list(JOBS, NS))["items"])
        return len(names) == 1 and names[0] != first and jobs == names

    await run.until(replaced, "the CronJob's first Job replaced by the next")


async def cascade_deleted(run: Run) -> None:
    client = run.client

    async def pod_count() -> int:
        return len((await client.list(PODS, NS, label_selector="app=doomed-rs"))["items"])

    await run.until(lambda: at_least_one(pod_count), "the ReplicaSet's pod")
    await client.delete(REPLICASETS, "doomed-rs", NS, propagation_policy="Foreground")

    async def all_gone() -> bool:
        return await gone(client, REPLICASETS, "doomed-rs") and await pod_count() == 0

    await run.until(all_gone, "the ReplicaSet and its pods deleted in the foreground")


async def namespace_deleted(run: Run) -> None:
    client = run.client
    await client.delete(NAMESPACES, "doomed", None)
    await run.until(lambda: gone(client, NAMESPACES, "doomed", None), "the namespace removed")


async def pipeline_succeeded(run: Run) -> None:
    async def succeeded() -> bool:
        obj = await run.client.get(PIPELINES, "build", NS)
        return (obj.get("status") or {}).get("phase") == "Succeeded"

    await run.until(succeeded, "the Pipeline Succeeded")


async def metrics_read_with_a_token(run: Run) -> None:
    """A metrics reader's token (a ServiceAccount allowed `get /metrics`; not system:masters, which the
    manager allows without asking) makes the secure port review the token and the access with the API
    server, as the manager's ServiceAccount: the TokenReview and SubjectAccessReview of its role."""
    headers = {"Authorization": f"Bearer {await metrics_reader_token(run.url)}"}
    url = f"{run.manager.server.url}/metrics"

    async def served() -> bool:
        async with aiohttp.ClientSession() as session, session.get(url, headers=headers, ssl=False) as answer:
            return answer.status == 200

    await run.until(served, "/metrics served to the metrics reader")


async def metrics_reader_token(url: str) -> str:
    reader = Identity(prefix="metrics", service_account="metrics-reader", namespace=NS)
    async with admin_session(url) as session:
        for path, body in metrics_reader_objects():
            async with session.post(path, json=body) as answer:
                assert answer.status == 201, await answer.text()
        return await request_token(session, reader)


async def scenario(run: Run) -> None:
    client = run.client
    await client.create(NAMESPACES, {"metadata": {"name": "doomed"}})
    await client.create(CONFIGMAPS, {"metadata": {"name": "content", "namespace": "doomed"}}, "doomed")
    service = {"metadata": {"name": "front"}, "spec": {"ports": [{"port": 80}]}}
    await client.create(SERVICES, service, "doomed")  # no deletecollection: deleted one by one
    await client.create(JOBS, flaky_job(), NS)
    await stray_replicaset(run)
    await client.create(DEPLOYMENTS, deployment(), NS)
    await client.create(REPLICASETS, replicaset("doomed-rs"), NS)
    await client.create(CRONJOBS, cronjob(), NS)
    await client.create(PIPELINES, pipeline(), NS)
    await asyncio.gather(
        run.until(lambda: gone(client, JOBS, "flaky"), "the flaky Job finished and deleted by its TTL"),
        deployment_rolled(run),
        cronjob_ran(run),
        cascade_deleted(run),
        namespace_deleted(run),
        pipeline_succeeded(run),
        metrics_read_with_a_token(run),
        job_adopts_trims_and_suspends(run),
        replicaset_releases_a_relabelled_pod(run),
        pipeline_meets_a_foreign_job(run),
    )


async def run_scenario(objects: list[dict[str, Any]], tmp: Path, timeout: float = 15.0) -> str | None:
    """Run the scenario, the manager bound to the roles in `objects`: None when it passed, else why not."""
    with user_agents_remembered():
        sim = await KubeSim(
            port=0, nodes=2, authorization_mode="RBAC", enable_admission_plugins=[OWNER_REFERENCES_ADMISSION]
        ).start()
    try:
        return await _run(sim, objects, tmp, timeout)
    finally:
        await sim.stop()


async def _run(sim: KubeSim, objects: list[dict[str, Any]], tmp: Path, timeout: float) -> str | None:
    """The run itself: a verdict at the first refusal, or when the scenario ends or times out."""
    user = service_account_user(manager_identity(Settings()))
    asked = hold_controllers_to_their_roles(sim, objects, user)
    denials = record_denials(sim, user)
    client = await create_client(kubeconfig=sim.kubeconfig, qps=0)
    try:
        await client.create(CUSTOMRESOURCEDEFINITIONS, custom_resource_definition(Pipeline))
        async with admin_session(sim.url) as session:
            await apply_objects(session, objects)
            token = await request_token(session, manager_identity(Settings()))
        kubeconfig = write_kubeconfig(tmp / "manager-kubeconfig", sim.url, token=token)
        flags = {**FLAGS, "kubeconfig": str(kubeconfig)}

        async def body() -> None:
            async with run_manager(sim.url, *CONTROLLERS, flags=flags, sync_timeout=timeout) as manager:
                await scenario(Run(sim.url, client, manager, denials, timeout, asked))

        task = asyncio.create_task(body())
        try:
            await wait_for(lambda: task.done() or bool(denials), timeout * 2, interval=0.02, message="run")
        except AssertionError as exc:
            return str(exc)
        finally:
            if not task.done():
                task.cancel()
            with contextlib.suppress(BaseException):
                await task
        if denials:
            return f"kubesim refused the manager: {denials[0]}"
        error = task.exception() if not task.cancelled() else None
        return None if error is None else f"{type(error).__name__}: {error}"
    finally:
        await client.close()
