"""The Greeting controller.

It keeps a ConfigMap named after each Greeting, owned by it, and the Greeting's Ready condition.
"""

import time

from manager import (
    CONFIGMAPS,
    Controller,
    For,
    Owns,
    PolicyRule,
    Request,
    patch_status,
    set_controller_reference,
    set_status_condition,
)

from greeting_operator.resource import GREETINGS, Greeting


class GreetingController(Controller):
    name = "greeting-controller"
    aliases = ("greeting",)
    enabled_by_default = False  # a plug-in is opt-in: aiokcm --controllers=*,greeting
    watches = (For(GREETINGS), Owns(CONFIGMAPS))
    # What `aiokcm rbac --controllers greeting-controller` prints (config/rbac/role.yaml) as this
    # controller's ClusterRole; the Events it records are covered by the manager's own ClusterRole.
    rbac = (
        PolicyRule(("demo.example.com",), ("greetings",), ("list", "watch")),
        PolicyRule(("demo.example.com",), ("greetings/status",), ("patch",)),
        PolicyRule(("demo.example.com",), ("greetings/finalizers",), ("update",)),  # blockOwnerDeletion
        PolicyRule(("",), ("configmaps",), ("list", "watch", "create", "patch")),
    )

    async def reconcile(self, request: Request) -> None:
        greeting = await self.get_typed(Greeting, request)  # an invalid spec is reported for you
        if greeting is None or greeting.metadata.deletion_timestamp:
            return  # gone or going: the garbage collector deletes the ConfigMap it owns
        data = {"message": greeting.spec.message}
        configmap = self.lister(CONFIGMAPS).get_by_key(request.key)
        if configmap is None:
            new = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": request.name, "namespace": request.namespace},
                "data": data,
            }
            set_controller_reference(greeting.raw, new)
            await self.client.create(CONFIGMAPS, new)
        elif configmap.get("data") != data:
            await self.client.patch(CONFIGMAPS, request.name, {"data": data}, request.namespace)
        conditions = list(greeting.status.conditions if greeting.status else [])
        ready = {
            "type": "Ready",
            "status": "True",
            "reason": "ConfigMapUpToDate",
            "message": f"ConfigMap {request.name} holds the message",
            "observedGeneration": greeting.metadata.generation,
        }
        if set_status_condition(conditions, ready, time.time()):
            await patch_status(self.client, GREETINGS, greeting.raw, {"conditions": conditions})
