"""Each controller, the event sender, the shared informers and the leader elector get a client of their own
over one connection pool: their own rate limiter with --kube-api-qps/--kube-api-burst, their own user agent
(kube-controller-manager's client builder)."""

from __future__ import annotations

from controllers.job import JobController
from controllers.replicaset import ReplicaSetController
from manager import CONFIGMAPS
from manager.testing import run_controllers


async def test_every_component_has_its_own_budget_and_user_agent() -> None:
    flags = {"kube_api_qps": 1.0, "kube_api_burst": 2}
    # rbac=False: the Job controller's client lists ConfigMaps here, which its role does not allow
    async with run_controllers(JobController, ReplicaSetController, flags=flags, rbac=False) as env:
        cluster = env.manager.cluster
        assert cluster is not None
        jobs = env.controller(JobController).client
        replicasets = env.controller(ReplicaSetController).client
        others = (cluster.factory.client, cluster.broadcaster.client)
        clients = (jobs, replicasets, *others)
        assert all(c.root is cluster.client for c in clients)  # one connection pool
        assert len({id(c.rate_limiter) for c in clients}) == len(clients)
        assert all((c.rate_limiter.qps, c.rate_limiter.burst) == (1.0, 2) for c in clients)
        base = cluster.client.user_agent
        assert base.startswith("aiokcm/v") and " python/" in base
        assert jobs.user_agent == f"{base}/job-controller"
        assert replicasets.user_agent == f"{base}/replicaset-controller"
        assert cluster.factory.client.user_agent == f"{base}/shared-informers"
        assert cluster.broadcaster.client.user_agent == f"{base}/event-broadcaster"

        for _ in range(3):  # the Job controller spends its burst and more...
            await jobs.list(CONFIGMAPS, "default")
        assert replicasets.rate_limiter.reserve() == 0.0  # ...and the ReplicaSet controller waits for none
        await jobs.close()  # closing a component client leaves the shared connections open
        assert (await replicasets.list(CONFIGMAPS, "default"))["items"] == []
