"""The Greeting operator for aiokcm (benchmarks/operator_vs_kopf.py): public API only.

For every Greeting (demo.example.com/v1), keep a ConfigMap `<name>-greeting` owned by it (controller owner
reference) holding spec.message, set status `ready: true` on the status subresource, and record a Normal event
`Greeted`. The ConfigMap is created only when missing from the informer cache; the status is patched only when
not ready yet; the event is recorded once, with the status change.
"""

from __future__ import annotations

import contextlib
from typing import Any

from manager import (
    CONFIGMAPS,
    AlreadyExists,
    Controller,
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


class GreetingController(Controller):
    name = "greeting-controller"
    aliases = ("greeting",)
    enabled_by_default = False
    concurrency = 5
    watches = (For(GREETINGS), Owns(CONFIGMAPS))

    async def reconcile(self, request: Request) -> None:
        greeting = self.lister(GREETINGS).get_by_key(request.key)
        if greeting is None or greeting["metadata"].get("deletionTimestamp"):
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
            self.recorder.event(greeting, "Normal", "Greeted", f"ConfigMap {configmap_name(request.name)}")
