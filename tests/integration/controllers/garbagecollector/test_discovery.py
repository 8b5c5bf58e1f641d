"""Monitors follow discovery: a CRD created at run time is watched and its objects own and are owned like
any others (JSON merge patches where strategic ones are refused), a removed CRD's monitor stops, and a
resource that cannot be listed holds nothing back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prometheus_client import REGISTRY

from kubesim import KubeSim
from manager import CONFIGMAPS, CUSTOMRESOURCEDEFINITIONS, GroupVersionResource, discover_resources
from tests.helpers import schemaless_crd, wait_for
from tests.integration.controllers.garbagecollector.harness import (
    NS,
    Env,
    QuickGarbageCollector,
    dangling_ref,
    owner_ref,
    running,
)

WIDGETS = GroupVersionResource("example.aiokcm.io", "v1", "widgets", "Widget")
SYNC_ERRORS = "garbagecollector_controller_resources_sync_error_total"


def widget_crd() -> dict[str, Any]:
    return schemaless_crd("example.aiokcm.io", "Widget")


def widget(name: str, owners: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": NS}
    if owners:
        meta["ownerReferences"] = owners
    return {"apiVersion": "example.aiokcm.io/v1", "kind": "Widget", "metadata": meta, "spec": {}}


async def install_widgets(env: Env) -> None:
    """Create the CRD once the garbage collector runs, and wait until it monitors widgets."""
    await env.client.create(CUSTOMRESOURCEDEFINITIONS, widget_crd())

    async def served() -> bool:
        return any(r.gvr == WIDGETS for r in (await discover_resources(env.client)).resources)

    await wait_for(served, 10.0, message="widgets served")
    await wait_for(lambda: env.gc.monitors.is_resource_synced(WIDGETS), 10.0, message="widgets monitored")


async def test_custom_resource_created_at_run_time_owns_a_configmap(kubesim: KubeSim, tmp_path: Path) -> None:
    async with running(kubesim, tmp_path, QuickGarbageCollector) as env:
        assert WIDGETS not in env.gc.monitors.monitors
        await install_widgets(env)
        owner = await env.client.create(WIDGETS, widget("w"))
        dependent = await env.create_cm("made-by-w", [owner_ref(owner, block=True)])
        await env.in_graph(dependent)
        await env.client.delete(WIDGETS, "w", NS)
        await env.wait_gone(CONFIGMAPS, "made-by-w")


async def test_custom_resource_dependent_loses_a_dangling_reference_by_merge_patch(
    kubesim: KubeSim, tmp_path: Path
) -> None:
    async with running(kubesim, tmp_path, QuickGarbageCollector) as env:
        await install_widgets(env)
        live = await env.create_cm("keeper")
        await env.client.create(WIDGETS, widget("kept", [dangling_ref(), owner_ref(live)]))

        async def pruned() -> bool:
            obj = await env.get(WIDGETS, "kept")
            assert obj is not None, "a widget with a live owner must stay"
            return [r["uid"] for r in obj["metadata"]["ownerReferences"]] == [live["metadata"]["uid"]]

        # A strategic merge patch of a custom resource is refused with 415: the JSON merge patch does it.
        await wait_for(pruned, 10.0, message="the dangling reference removed")


async def test_removed_crd_stops_its_monitor(kubesim: KubeSim, tmp_path: Path) -> None:
    async with running(kubesim, tmp_path, QuickGarbageCollector) as env:
        await install_widgets(env)
        cluster = env.manager.cluster
        assert cluster is not None
        assert any(i.gvr == WIDGETS for i in cluster.factory.informers())
        await env.client.delete(CUSTOMRESOURCEDEFINITIONS, "widgets.example.aiokcm.io")
        await wait_for(lambda: WIDGETS not in env.gc.monitors.monitors, 10.0, message="widgets unmonitored")
        await wait_for(
            lambda: not any(i.gvr == WIDGETS for i in cluster.factory.informers()),
            5.0,
            message="informer gone",
        )


async def test_a_resource_that_cannot_be_listed_holds_back_nothing_else(
    kubesim: KubeSim, tmp_path: Path
) -> None:
    errors_before = REGISTRY.get_sample_value(SYNC_ERRORS) or 0.0
    kubesim.faults.fail(500, verb="list", resource="secrets")
    async with running(kubesim, tmp_path, QuickGarbageCollector, wait_synced=False) as env:
        # The workers start once the initial wait (0.5 s here, 30 s upstream) is over.
        await wait_for(lambda: env.gc.collecting, 5.0, message="workers started without the secrets monitor")
        assert env.gc.monitors.unsynced() == ["secrets.v1"]
        await env.create_cm("stray", [dangling_ref()])
        await env.wait_gone(CONFIGMAPS, "stray")
        cluster = env.manager.cluster
        assert cluster is not None and cluster.factory.readiness_check() is None  # not a readiness problem
        # The sync round that added the monitors timed out waiting for them: counted.
        await wait_for(
            lambda: (REGISTRY.get_sample_value(SYNC_ERRORS) or 0.0) > errors_before,
            5.0,
            message="a sync error",
        )
        kubesim.faults.clear()
        await wait_for(env.gc.monitors.is_synced, 10.0, message="secrets monitored once listable")
