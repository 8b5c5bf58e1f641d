"""The Job and ReplicaSet controllers in one manager: one pods informer, every handler on it inline, so the
production pods informer takes the one-by-one ingest path (manager.informers.listener), and the controllers
still converge through it."""

from __future__ import annotations

import asyncio
import contextlib

from kubesim import KubeSim
from manager import JOBS, PODS, REPLICASETS
from manager.cli.plugins import discover
from manager.client.rest import create_client
from manager.config.settings import Settings
from manager.lifecycle.cluster import Cluster, install
from manager.lifecycle.manager import Manager
from tests.helpers import cluster_of, wait_for
from tests.integration.controllers.job.harness import job_manifest
from tests.integration.controllers.replicaset.harness import NS, rs_manifest


async def test_job_and_replicaset_share_one_pods_informer_whose_handlers_are_all_inline(
    kubesim: KubeSim,
) -> None:
    settings = Settings(
        master=kubesim.url,
        controllers=["job", "replicaset"],
        leader_elect=False,
        bind_address="127.0.0.1",
        port=0,
        kube_api_qps=0,
        shutdown_grace_period=2.0,
    )
    infos = [i for i in discover() if i.name in ("job-controller", "replicaset-controller")]
    manager = Manager(settings, infos, install=install)
    task = asyncio.create_task(manager.run(handle_signals=False))
    client = await create_client(master=kubesim.url, qps=0)
    try:

        def synced_cluster() -> Cluster | None:
            if task.done():
                task.result()  # surface a start-up failure
            cluster = cluster_of(manager)
            if cluster is not None and len(cluster.controllers) == 2 and cluster.factory.has_synced():
                return cluster
            return None

        cluster = await wait_for(synced_cluster, 10.0, message="both controllers synced")
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
        manager.request_shutdown("test done")
        with contextlib.suppress(Exception):
            await asyncio.wait_for(task, 10.0)
        await client.close()
