"""Pod creates refused with the NamespaceTerminating cause (403 from kubesim's NamespaceLifecycle admission)
are not failures for the ReplicaSet controller: no ReplicaFailure condition, no reconcile error, no retry
(upstream replica_set.go and controller_utils.go test v1.NamespaceTerminatingCause). Events cannot be written
into such a namespace anyway; the Job controller shares the check (controllers/job/podcontrol.py)."""

from __future__ import annotations

from controllers.replicaset import ReplicaSetController
from manager import NAMESPACES, REPLICASETS
from manager.testing import run_controllers, wait_for
from tests.integration.controllers.namespace.harness import namespace, replicaset

NS = "closing"


async def test_creates_in_a_terminating_namespace_are_quietly_dropped() -> None:
    async with run_controllers(ReplicaSetController) as env:
        client = env.client
        held = namespace(NS)
        held["metadata"]["finalizers"] = ["example.com/hold"]  # stays Terminating: no namespace controller
        await client.create(NAMESPACES, held)
        await client.create(REPLICASETS, replicaset("web", NS, replicas=0))
        await client.delete(NAMESPACES, NS)
        ctl = env.controller(ReplicaSetController)
        before = ctl.stats.reconciles

        await client.patch(REPLICASETS, "web", {"spec": {"replicas": 2}}, NS)

        def reconciled() -> bool:
            return ctl.stats.reconciles > before and not ctl.queue.processing

        await wait_for(reconciled, message="the ReplicaSet reconciled in the terminating namespace")
        rs = await client.get(REPLICASETS, "web", NS)
        conditions = (rs.get("status") or {}).get("conditions") or []
        assert not [c for c in conditions if c.get("type") == "ReplicaFailure"]
        assert ctl.stats.errors == 0
        assert len(ctl.queue) == 0 and ctl.queue.waiting == 0  # nothing left to retry
