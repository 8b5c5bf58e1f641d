"""A new manager finishes what the last one started: the graph is rebuilt from the informers' lists, and an
owner that was waiting in a Foreground deletion is collected once its dependent finally goes."""

from __future__ import annotations

from pathlib import Path

from kubesim import KubeSim
from manager import CONFIGMAPS
from tests.helpers import wait_for
from tests.integration.controllers.garbagecollector.harness import NS, owner_ref, running


async def test_restart_in_the_middle_of_a_foreground_deletion(kubesim: KubeSim, tmp_path: Path) -> None:
    async with running(kubesim, tmp_path) as env:
        root = await env.create_cm("root")
        leaf = await env.create_cm("leaf", [owner_ref(root, block=True)], finalizers=["example.com/hold"])
        await env.in_graph(leaf)
        await env.client.delete(CONFIGMAPS, "root", NS, propagation_policy="Foreground")

        async def leaf_held() -> bool:
            obj = await env.get(CONFIGMAPS, "leaf")
            return bool(obj and obj["metadata"].get("deletionTimestamp"))

        await wait_for(leaf_held, 10.0, message="the leaf deleted and held by its finalizer")
        await wait_for(env.idle, 5.0, message="the garbage collector idle")
    # No garbage collector runs now: the root still waits for the leaf.

    async with running(kubesim, tmp_path) as env:
        waiting = await env.get(CONFIGMAPS, "root")
        assert waiting is not None and waiting["metadata"]["finalizers"] == ["foregroundDeletion"]
        assert env.gc.graph_has_uid(root["metadata"]["uid"]) and env.gc.graph_has_uid(leaf["metadata"]["uid"])
        await env.client.patch(CONFIGMAPS, "leaf", {"metadata": {"finalizers": None}}, NS)
        await env.wait_gone(CONFIGMAPS, "leaf")
        await env.wait_gone(CONFIGMAPS, "root")
