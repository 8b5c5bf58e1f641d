"""The Greeting operator for aiokcm (benchmarks/operator_vs_kopf.py): public API only.

For every Greeting (demo.example.com/v1), keep a ConfigMap `<name>-greeting` owned by it (controller owner
reference) holding spec.message, set status `ready: true` on the status subresource, and record a Normal event
`Greeted`. The ConfigMap is created only when missing from the informer cache; the status is patched only when
not ready yet; the event is recorded once, with the status change. The cache lags the controller's own writes:
a reconcile caused by the ConfigMap's ADDED event may still see the Greeting without its status. The
controller remembers the resourceVersion it patched the status from, and while the cache shows that same
version the patch is in flight: no second patch, no second event (any other write bumps the version).
"""

from __future__ import annotations

import contextlib
from typing import Any

from pydantic import Field

from manager import (
    CONFIGMAPS,
    AlreadyExists,
    Controller,
    ControllerContext,
    ControllerFlags,
    For,
    GroupVersionResource,
    NotFound,
    Owns,
    Request,
)

GREETINGS: GroupVersionResource[dict[str, Any]] = GroupVersionResource(
    "demo.example.com", "v1", "greetings", "Greeting"
)


def configmap_name(greeting_name: str) -> str:
    return f"{greeting_name}-greeting"


class GreetingFlags(ControllerFlags):
    concurrent_bench_greeting_syncs: int = Field(
        5,
        gt=0,
        description="Workers of bench-greeting-controller (5, as kube-controller-manager's Job and "
        "ReplicaSet controllers).",
    )


class GreetingController(Controller):
    # Not "greeting-controller": examples/greeting-operator, installed by make test, claims that name.
    name = "bench-greeting-controller"
    aliases = ("bench-greeting",)
    enabled_by_default = False
    flags = GreetingFlags
    concurrency = "concurrent_bench_greeting_syncs"
    watches = (For(GREETINGS), Owns(CONFIGMAPS))

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.patched_from: dict[str, str] = {}  # key -> resourceVersion the status was patched from

    async def reconcile(self, request: Request) -> None:
        greeting = self.lister(GREETINGS).get_by_key(request.key)
        if greeting is None or greeting["metadata"].get("deletionTimestamp"):
            self.patched_from.pop(request.key, None)
            return
        meta = greeting["metadata"]
        cm_key = f"{request.namespace}/{configmap_name(request.name)}"
        if self.lister(CONFIGMAPS).get_by_key(cm_key) is None:
            owner = {
                "apiVersion": GREETINGS.api_version,
                "kind": GREETINGS.kind,
                "name": meta["name"],
                "uid": meta["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
            body = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": configmap_name(request.name),
                    "namespace": request.namespace,
                    "ownerReferences": [owner],
                },
                "data": {"message": str((greeting.get("spec") or {}).get("message", ""))},
            }
            with contextlib.suppress(AlreadyExists):  # the cache lags our own write
                await self.client.create(CONFIGMAPS, body, request.namespace)
        if self.patched_from.get(request.key) == meta["resourceVersion"]:
            return  # our status patch has not reached the cache yet
        self.patched_from.pop(request.key, None)
        if (greeting.get("status") or {}).get("ready") is not True:
            try:
                await self.client.patch(
                    GREETINGS,
                    request.name,
                    {"status": {"ready": True}},
                    request.namespace,
                    subresource="status",
                )
            except NotFound:
                return
            self.patched_from[request.key] = meta["resourceVersion"]
            self.recorder.event(greeting, "Normal", "Greeted", f"ConfigMap {configmap_name(request.name)}")
