"""A resource typed with a TypedDict: the controller's lister and informer read its objects as that type."""

from __future__ import annotations

from typing import Any, TypedDict, assert_type

from manager import (
    CONFIGMAPS,
    Controller,
    For,
    GroupVersionResource,
    Lister,
    PolicyRule,
    Request,
    SharedInformer,
)
from manager.testing import run_controllers, wait_for


class ConfigMapMeta(TypedDict, total=False):
    name: str
    namespace: str


class ConfigMap(TypedDict, total=False):
    metadata: ConfigMapMeta
    data: dict[str, str]


TYPED_CONFIGMAPS: GroupVersionResource[ConfigMap] = GroupVersionResource("", "v1", "configmaps", "ConfigMap")


class Reader(Controller):
    name = "typed-reader-controller"
    watches = (For(TYPED_CONFIGMAPS, label_selector="app=typed"),)
    rbac = (PolicyRule(("",), ("configmaps",), ("get", "list", "watch")),)

    def __init__(self, ctx: Any) -> None:
        super().__init__(ctx)
        self.seen: dict[str, dict[str, str]] = {}

    async def reconcile(self, request: Request) -> None:
        lister = self.lister(TYPED_CONFIGMAPS)
        assert_type(lister, Lister[ConfigMap])
        cm = lister.get_by_key(request.key)
        if cm is not None:
            self.seen[request.key] = cm.get("data", {})


async def test_a_typed_resource_reads_back_as_its_typeddict_and_shares_the_informer() -> None:
    async with run_controllers(Reader) as env:
        await env.client.create(
            CONFIGMAPS,
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "t", "namespace": "default", "labels": {"app": "typed"}},
                "data": {"k": "v"},
            },
        )
        reader = env.controller(Reader)
        await wait_for(lambda: reader.seen.get("default/t") == {"k": "v"}, message="the typed read")
        informer = reader.informer(TYPED_CONFIGMAPS)
        assert_type(informer, SharedInformer[ConfigMap])
        # Same fields, same informer: the type parameter changes nothing at run time.
        assert TYPED_CONFIGMAPS == CONFIGMAPS
        assert reader.informer(CONFIGMAPS, label_selector="app=typed") is informer
