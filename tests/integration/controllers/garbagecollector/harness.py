"""Harness of the garbage collector's integration tests (no tests here): the real Manager running the garbage
collector beside the Job and ReplicaSet controllers against kubesim over HTTP, a separate client, kubectl,
and a watch that records the order in which objects were deleted."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pytest

from controllers.garbagecollector import GarbageCollectorController
from controllers.job import JobController
from controllers.replicaset import ReplicaSetController
from kubesim import KubeSim
from manager import CONFIGMAPS, EVENTS, ApiClient, GroupVersionResource, NotFound
from manager.client.rest import create_client
from manager.lifecycle.manager import Manager
from manager.testing import controller_of, record_denials, run_manager
from tests.helpers import run_kubectl, wait_for

NS = "default"
needs_kubectl = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")


class QuickGarbageCollector(GarbageCollectorController):
    """Upstream behaviour with short discovery timings: a CRD created at run time is monitored within a
    fraction of a second, and a resource that cannot be listed holds the workers back 0.5 s, not 30 s."""

    resync_period: ClassVar[float] = 0.2
    initial_sync_timeout: ClassVar[float] = 0.5


def owner_ref(
    owner: dict[str, Any], *, block: bool | None = None, controller: bool | None = None
) -> dict[str, Any]:
    ref: dict[str, Any] = {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
    }
    if block is not None:
        ref["blockOwnerDeletion"] = block
    if controller is not None:
        ref["controller"] = controller
    return ref


def dangling_ref(name: str = "ghost", kind: str = "ConfigMap", api_version: str = "v1") -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "name": name, "uid": str(uuid.uuid4())}


def configmap(
    name: str,
    owners: list[dict[str, Any]] | None = None,
    *,
    namespace: str = NS,
    finalizers: list[str] | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if owners:
        meta["ownerReferences"] = owners
    if finalizers:
        meta["finalizers"] = finalizers
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": "v"}}


@dataclass
class Env:
    sim: KubeSim
    client: ApiClient
    manager: Manager
    gc: GarbageCollectorController
    tmp: Path
    deleted: list[tuple[str, str]] = field(default_factory=list)  # (kind, name) in the order they went

    async def create_cm(
        self, name: str, owners: list[dict[str, Any]] | None = None, **kw: Any
    ) -> dict[str, Any]:
        return await self.client.create(CONFIGMAPS, configmap(name, owners, **kw))

    async def get(
        self, gvr: GroupVersionResource, name: str, namespace: str | None = NS
    ) -> dict[str, Any] | None:
        try:
            return await self.client.get(gvr, name, namespace)
        except NotFound:
            return None

    async def wait_gone(self, gvr: GroupVersionResource, name: str, timeout: float = 10.0) -> None:
        async def gone() -> bool:
            return await self.get(gvr, name) is None

        await wait_for(gone, timeout, message=f"{gvr.resource}/{name} to be deleted")

    async def in_graph(self, obj: dict[str, Any]) -> None:
        """Wait until the garbage collector's graph holds `obj` (upstream tests' GraphHasUID)."""
        uid = obj["metadata"]["uid"]
        await wait_for(lambda: self.gc.graph_has_uid(uid), 5.0, message=f"{uid} in the graph")

    async def kubectl(self, *args: str) -> str:
        code, out, err = await run_kubectl(self.sim.kubeconfig, self.tmp / "kubectl-cache", *args)
        assert code == 0, err
        return out

    async def events(self, reason: str, namespace: str = NS) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = (await self.client.list(EVENTS, namespace))["items"]
        return [e for e in items if e.get("reason") == reason]

    def idle(self) -> bool:
        """Nothing queued, waiting out a backoff, or in progress in the garbage collector."""
        queues = (self.gc.attempt_to_delete, self.gc.attempt_to_orphan)
        return self.gc.builder.is_idle() and all(
            not len(q) and not q.waiting and not q.processing for q in queues
        )


async def _record_deletions(client: ApiClient, start: dict[GroupVersionResource, str], env: Env) -> None:
    """Append every deletion after the resourceVersions in `start` to `env.deleted`."""

    async def one(gvr: GroupVersionResource, rv: str) -> None:
        async for event_type, obj in client.watch(gvr, NS, resource_version=rv):
            if event_type == "DELETED":
                env.deleted.append((gvr.kind, obj["metadata"]["name"]))

    await asyncio.gather(*(one(gvr, rv) for gvr, rv in start.items()))


@contextlib.asynccontextmanager
async def running(
    sim: KubeSim,
    tmp: Path,
    gc_class: type[GarbageCollectorController] = GarbageCollectorController,
    *,
    record: tuple[GroupVersionResource, ...] = (),
    wait_synced: bool = True,
    **flags: Any,
) -> AsyncIterator[Env]:
    """The manager with the garbage collector, the Job and the ReplicaSet controllers; returns once the
    garbage collector's workers run on a synced graph (unless `wait_synced` is False)."""
    client = await create_client(kubeconfig=sim.kubeconfig, qps=0)  # kubesim's admin
    recorder: asyncio.Task[None] | None = None
    rbac = sim.authorization_mode == "RBAC"
    denials = record_denials(sim) if rbac else []
    try:
        async with run_manager(
            sim.url,
            gc_class,
            JobController,
            ReplicaSetController,
            flags=flags,
            rbac=rbac,
            ca_pem=sim.ca_pem,
        ) as manager:
            gc = controller_of(manager, GarbageCollectorController)
            env = Env(sim, client, manager, gc, tmp)
            if record:  # listed now, watched from there: no deletion is missed however late the watch opens
                start = {gvr: (await client.list(gvr, NS))["metadata"]["resourceVersion"] for gvr in record}
                recorder = asyncio.create_task(_record_deletions(client, start, env))
            if wait_synced:
                await wait_for(
                    lambda: gc.collecting and gc.is_synced(), 10.0, message="the garbage collector"
                )
            yield env
        assert not denials, f"kubesim refused the manager: {sorted(set(denials))}"
    finally:
        if recorder is not None:
            recorder.cancel()
            with contextlib.suppress(BaseException):
                await recorder
        await client.close()
