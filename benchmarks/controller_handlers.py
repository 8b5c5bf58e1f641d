"""The pods informer as it runs in production: the Job and ReplicaSet controllers' own pod handlers
registered on it through `Controller.setup()` (for informer_ingest.py --controllers).

    .venv/bin/python benchmarks/controller_handlers.py [CALLS]

run alone prints what each handler costs per pod update, the objects warm in the CPU cache (inside the
informer the replaced pod is cold, so there it costs more).

The fixture pods (informer_fixtures.make_pod) are owned by ReplicaSet `web-7c9f8d6b5` in namespaces
team-00..team-49; that ReplicaSet is put in the ReplicaSet cache of every namespace, so each pod event takes
the handler's full path (resolve the owner, enqueue its key) rather than an early return. No workers run:
the keys pile up deduplicated in the controllers' queues, as they would between two reconciles.
"""

from __future__ import annotations

import asyncio
import copy
import sys
import time
from typing import Any

import structlog
from informer_fixtures import OWNER_UID, PagedListClient, make_pod

from controllers.job import JobController
from controllers.replicaset import ReplicaSetController
from manager.apimachinery.resources import PODS, REPLICASETS
from manager.config.settings import Settings
from manager.controller.base import Controller, ControllerContext
from manager.informers import NAMESPACE_INDEX, HandlerRegistration, InformerFactory, strip_managed_fields

NAMESPACES = 50


def owner_replicaset(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "web-7c9f8d6b5", "namespace": namespace, "uid": OWNER_UID},
        "spec": {
            "replicas": 2000,
            "selector": {"matchLabels": {"app": "web", "pod-template-hash": "7c9f8d6b5"}},
        },
    }


def attach_controllers(factory: InformerFactory) -> list[HandlerRegistration]:
    """Build both controllers on `factory`, register their handlers and fill the ReplicaSet cache; the
    registrations on the pods informer."""
    logger = structlog.get_logger()
    ctx = ControllerContext(settings=Settings(), health=None, logger=logger, informers=factory)
    controllers: list[Controller] = [JobController(ctx), ReplicaSetController(ctx)]
    for controller in controllers:
        controller.setup()
    replicasets = factory.informer(REPLICASETS).indexer
    for i in range(NAMESPACES):
        replicasets.upsert(f"team-{i:02d}/web-7c9f8d6b5", owner_replicaset(f"team-{i:02d}"))
    on_pods = []
    for controller in controllers:
        for watch, registration in zip(controller.declare_watches(), controller.registrations(), strict=True):
            registration.start()
            if watch.resource == PODS:
                on_pods.append(registration)
    return on_pods


async def handler_costs(calls: int) -> None:
    factory = InformerFactory(PagedListClient([]))
    registrations = attach_controllers(factory)
    old = strip_managed_fields(make_pod(7))
    new = copy.deepcopy(old)
    new["metadata"]["resourceVersion"] = str(int(old["metadata"]["resourceVersion"]) + 1)
    for registration in registrations:
        on_update = registration.handler.on_update
        started = time.perf_counter()
        for _ in range(calls):
            on_update(old, new)
        per_call = (time.perf_counter() - started) / calls * 1e6
        print(f"{type(registration.handler).__qualname__:<40} {per_call:6.2f} us per pod update")
    for name, index in factory.informer(PODS).indexer.get_indexers().items():
        if name == NAMESPACE_INDEX:
            continue  # an update keeps the key, so the store leaves the namespace index alone
        started = time.perf_counter()
        for _ in range(calls):
            index(old)
            index(new)
        per_call = (time.perf_counter() - started) / calls * 1e6
        print(f"{'index ' + name + ' (old and new)':<40} {per_call:6.2f} us per pod update")


if __name__ == "__main__":
    asyncio.run(handler_costs(int(sys.argv[1]) if len(sys.argv) > 1 else 200_000))
