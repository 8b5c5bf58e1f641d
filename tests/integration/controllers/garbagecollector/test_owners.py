"""Owner references the garbage collector must judge: chains, absent owners, wrong UIDs, a second live owner,
owners in another namespace, kinds nobody serves, and a dependent whose finalizer nobody removes."""

from __future__ import annotations

import time
from pathlib import Path

from kubesim import KubeSim
from manager import CONFIGMAPS, NAMESPACES
from tests.helpers import wait_for
from tests.integration.controllers.garbagecollector.harness import NS, dangling_ref, owner_ref, running


async def test_three_level_foreground_chain_goes_bottom_up(kubesim: KubeSim, tmp_path: Path) -> None:
    async with running(kubesim, tmp_path, record=(CONFIGMAPS,)) as env:
        a = await env.create_cm("a")
        b = await env.create_cm("b", [owner_ref(a, block=True)])
        c = await env.create_cm("c", [owner_ref(b, block=True)])
        for obj in (a, b, c):
            await env.in_graph(obj)
        await env.client.delete(CONFIGMAPS, "a", NS, propagation_policy="Foreground")
        await env.wait_gone(CONFIGMAPS, "a")
        assert await env.get(CONFIGMAPS, "b") is None and await env.get(CONFIGMAPS, "c") is None
        assert [name for _, name in env.deleted] == ["c", "b", "a"]


async def test_dependent_of_an_absent_owner_uid_is_deleted(kubesim: KubeSim, tmp_path: Path) -> None:
    async with running(kubesim, tmp_path) as env:
        await env.create_cm("orphaned", [dangling_ref("ghost")])
        await env.wait_gone(CONFIGMAPS, "orphaned")


async def test_owner_reference_whose_uid_mismatches_the_live_object_is_dangling(
    kubesim: KubeSim, tmp_path: Path
) -> None:
    async with running(kubesim, tmp_path) as env:
        live = await env.create_cm("owner")
        impostor = {**owner_ref(live), "uid": dangling_ref()["uid"]}  # right name and kind, wrong uid
        await env.create_cm("dependent", [impostor])
        await env.wait_gone(CONFIGMAPS, "dependent")
        assert await env.get(CONFIGMAPS, "owner") is not None


async def test_dependent_with_a_second_live_owner_only_loses_the_dangling_reference(
    kubesim: KubeSim, tmp_path: Path
) -> None:
    async with running(kubesim, tmp_path) as env:
        live = await env.create_cm("alive")
        dead = dangling_ref("dead")
        await env.create_cm("shared", [dead, owner_ref(live)])

        async def pruned() -> bool:
            obj = await env.get(CONFIGMAPS, "shared")
            assert obj is not None, "the dependent of a live owner must stay"
            return [r["uid"] for r in obj["metadata"].get("ownerReferences", [])] == [live["metadata"]["uid"]]

        await wait_for(pruned, 10.0, message="the dangling reference removed")
        await wait_for(env.idle, 5.0, message="the garbage collector idle")
        assert await env.get(CONFIGMAPS, "shared") is not None


async def test_owner_in_another_namespace_gets_an_event_and_the_dependent_goes(
    kubesim: KubeSim, tmp_path: Path
) -> None:
    async with running(kubesim, tmp_path) as env:
        await env.client.create(
            NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}}
        )
        parent = await env.create_cm("parent")
        await env.in_graph(parent)
        child = await env.create_cm("child", [owner_ref(parent)], namespace="other")

        async def gone() -> bool:
            return await env.get(CONFIGMAPS, "child", "other") is None

        await wait_for(gone, 10.0, message="the dependent in the other namespace deleted")
        events = await wait_for(
            lambda: env.events("OwnerRefInvalidNamespace", "other"), 5.0, message="the event"
        )
        event = events[0]
        uid = parent["metadata"]["uid"]
        assert event["type"] == "Warning"
        assert event["message"] == (
            f"ownerRef [v1/ConfigMap, namespace: other, name: parent, uid: {uid}] "
            'does not exist in namespace "other"'
        )
        assert event["involvedObject"]["uid"] == child["metadata"]["uid"]
        assert event["source"]["component"] == "garbage-collector-controller"
        assert await env.get(CONFIGMAPS, "parent") is not None


async def test_unknown_owner_kind_is_retried_with_backoff_never_in_a_hot_loop(
    kubesim: KubeSim, tmp_path: Path
) -> None:
    async with running(kubesim, tmp_path) as env:
        ref = dangling_ref("widget", kind="Nope", api_version="example.com/v1")
        start = time.monotonic()
        await env.create_cm("held", [ref])
        # The virtual owner is checked against the API, fails to map, and is retried through the rate
        # limiter: 5 ms, 10 ms, 20 ms... A hot loop would reach six retries at once.
        virtual = await wait_for(
            lambda: env.gc.builder.uid_to_node.get(ref["uid"]), 5.0, message="virtual owner"
        )
        await wait_for(
            lambda: env.gc.attempt_to_delete.num_requeues(virtual) >= 6, 10.0, message="six retries"
        )
        assert time.monotonic() - start >= 0.005 + 0.010 + 0.020 + 0.040 + 0.080
        # Meanwhile the rest of the graph is collected as usual, and the dependent is left alone.
        await env.create_cm("other", [dangling_ref()])
        await env.wait_gone(CONFIGMAPS, "other")
        assert await env.get(CONFIGMAPS, "held") is not None


async def test_owner_waits_visibly_on_a_dependent_finalizer_without_spinning(
    kubesim: KubeSim, tmp_path: Path
) -> None:
    async with running(kubesim, tmp_path) as env:
        owner = await env.create_cm("owner")
        held = await env.create_cm("held", [owner_ref(owner, block=True)], finalizers=["example.com/hold"])
        await env.in_graph(held)
        await env.client.delete(CONFIGMAPS, "owner", NS, propagation_policy="Foreground")

        async def held_being_deleted() -> bool:
            obj = await env.get(CONFIGMAPS, "held")
            return bool(obj and obj["metadata"].get("deletionTimestamp"))

        await wait_for(held_being_deleted, 10.0, message="the dependent deleted, held by its finalizer")
        # Idle: nothing queued, nothing waiting out a backoff. An owner that spun would never get here.
        await wait_for(env.idle, 5.0, message="nothing left to do while the finalizer stays")
        waiting = await env.get(CONFIGMAPS, "owner")
        assert waiting is not None and waiting["metadata"]["finalizers"] == ["foregroundDeletion"]

        await env.client.patch(CONFIGMAPS, "held", {"metadata": {"finalizers": None}}, NS)
        await env.wait_gone(CONFIGMAPS, "owner")
