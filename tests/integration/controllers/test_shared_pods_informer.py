"""The Job and ReplicaSet controllers in one manager: one pods informer, every handler on it inline, so the
production pods informer takes the one-by-one ingest path (manager.informers.listener), and the controllers
still converge through it."""

from __future__ import annotations

from controllers.job import JobController
from controllers.replicaset import ReplicaSetController
from kubesim import KubeSim
from manager import JOBS, PODS, REPLICASETS
from manager.client.rest import create_client
from manager.testing import run_manager
from tests.helpers import wait_for
from tests.integration.controllers.job.harness import job_manifest
from tests.integration.controllers.replicaset.harness import NS, rs_manifest


async def test_job_and_replicaset_share_one_pods_informer_whose_handlers_are_all_inline(
    kubesim: KubeSim,
) -> None:
    client = await create_client(master=kubesim.url, qps=0)
    try:
        async with run_manager(kubesim.url, JobController, ReplicaSetController) as manager:
            cluster = manager.cluster
            assert cluster is not None
            pods_informers = [i for i in cluster.factory.informers() if i.gvr == PODS]
            assert len(pods_informers) == 1, "one pods informer for the whole process"
            registrations = [r for ctl in cluster.controllers for r in ctl.registrations()]
            assert len(registrations) == 4 and all(r.inline for r in registrations)
            pods = pods_informers[0]
            await wait_for(pods.dispatches_inline, 5.0, message="pods informer applies events one by one")

            await client.create(REPLICASETS, rs_manifest("web", 2))
            await client.create(JOBS, job_manifest("batch", completions=2, parallelism=2))

            async def converged() -> bool:
                rs = await client.get(REPLICASETS, "web", namespace=NS)
                job = await client.get(JOBS, "batch", namespace=NS)
                complete = any(
                    c.get("type") == "Complete" and c.get("status") == "True"
                    for c in job.get("status", {}).get("conditions", ())
                )
                return bool(rs.get("status", {}).get("readyReplicas") == 2 and complete)

            await wait_for(converged, 20.0, message="ReplicaSet ready and Job complete")
            assert pods.handler_errors == 0
            await wait_for(pods.dispatches_inline, 5.0, message="still one by one once idle")
    finally:
        await client.close()
