"""The pods informer as it runs in production: the Job and ReplicaSet controllers' own pod handlers
registered on it through `Controller.setup()` (for informer_ingest.py --controllers).

The fixture pods (informer_fixtures.make_pod) are owned by ReplicaSet `web-7c9f8d6b5` in namespaces
team-00..team-49; that ReplicaSet is put in the ReplicaSet cache of every namespace, so each pod event takes
the handler's full path (resolve the owner, enqueue its key) rather than an early return. No workers run:
the keys pile up deduplicated in the controllers' queues, as they would between two reconciles.
"""

from __future__ import annotations

from typing import Any

import structlog
from informer_fixtures import OWNER_UID

from controllers.job import JobController
from controllers.replicaset import ReplicaSetController
from manager.controller import Controller, ControllerContext
from manager.informers import HandlerRegistration, InformerFactory
from manager.resources import PODS, REPLICASETS
from manager.settings import Settings

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
