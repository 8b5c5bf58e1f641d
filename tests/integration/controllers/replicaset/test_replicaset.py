"""replicaset-controller end to end: the real Manager against kubesim (simulated kubelet) over HTTP."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from manager import PODS, REPLICASETS, Invalid
from tests.helpers import wait_for
from tests.integration.controllers.replicaset.harness import (
    NS,
    Env,
    get_or_none,
    rs_manifest,
    sync_barrier,
)


def controller_refs(pod: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in pod["metadata"].get("ownerReferences") or () if r.get("controller")]


def owned_by(pods: list[dict[str, Any]], uid: str) -> list[dict[str, Any]]:
    return [p for p in pods if [r["uid"] for r in controller_refs(p)] == [uid]]


def bare_pod(name: str, template: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": template["metadata"]["labels"]}, "spec": template["spec"]}


async def test_scale_up_down_to_zero_with_status_and_events(env: Env) -> None:
    rs = await env.create_rs("web", 3, extra_template_labels={"tier": "fe"})
    uid = rs["metadata"]["uid"]
    pods = await env.wait_pod_count("web", 3)
    for pod in pods:
        meta = pod["metadata"]
        assert meta["generateName"] == "web-"
        assert meta["name"].startswith("web-") and len(meta["name"]) == len("web-") + 5
        assert meta["labels"] == {"app": "web", "tier": "fe"}
        assert meta["annotations"]["kubesim.aiokcm.io/ready-after-seconds"] == "0"
        assert meta["ownerReferences"] == [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": "web",
                "uid": uid,
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
    status = await env.wait_status(
        "web",
        replicas=3,
        fullyLabeledReplicas=3,
        readyReplicas=3,
        availableReplicas=3,
        observedGeneration=1,
    )
    assert "conditions" not in status

    created = {p["metadata"]["name"] for p in pods}
    events = await env.events("web", "SuccessfulCreate")
    assert {e["message"] for e in events} == {f"Created pod: {n}" for n in created}
    assert all(e["type"] == "Normal" for e in events)
    assert all(e["source"]["component"] == "replicaset-controller" for e in events)

    await env.scale("web", 5)
    await env.wait_status("web", replicas=5, readyReplicas=5, observedGeneration=2)

    before = await env.pod_names("web")
    await env.scale("web", 1)
    await env.wait_status("web", replicas=1, readyReplicas=1, availableReplicas=1, observedGeneration=3)
    after = await env.pod_names("web")
    deleted = before - after
    assert len(after) == 1 and len(deleted) == 4

    async def delete_events() -> set[str]:
        return {e["message"] for e in await env.events("web", "SuccessfulDelete")}

    await wait_for(lambda: _superset(delete_events, {f"Deleted pod: {n}" for n in deleted}), 5.0)

    await env.scale("web", 0)
    await env.wait_pod_count("web", 0)
    status = await env.wait_status("web", replicas=0, readyReplicas=0, observedGeneration=4)
    assert status["replicas"] == 0


async def _superset(get: Callable[[], Awaitable[set[str]]], wanted: set[str]) -> bool:
    return wanted <= await get()


@pytest.mark.slow
async def test_available_replicas_honour_min_ready_seconds(env: Env) -> None:
    await env.create_rs("slow", 2, min_ready_seconds=3)
    status = await env.wait_status("slow", replicas=2, readyReplicas=2)
    assert int(status.get("availableReplicas") or 0) == 0, "ready pods are not available before 3 s"
    # Nothing else changes after this point: only the controller's own requeue makes them available.
    await env.wait_status("slow", timeout=8.0, readyReplicas=2, availableReplicas=2)


async def test_adoption_release_and_pods_of_another_controller(env: Env) -> None:
    template = rs_manifest("adopt", 2)["spec"]["template"]
    orphan = bare_pod("orphan", template)
    foreign_ref = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": "someone-else",
        "uid": "00000000-0000-0000-0000-000000000001",
        "controller": True,
    }
    foreign = {
        "metadata": {"name": "foreign", "labels": {"app": "adopt"}, "ownerReferences": [foreign_ref]},
        "spec": template["spec"],
    }
    await env.client.create(PODS, orphan, NS)
    await env.client.create(PODS, foreign, NS)
    await env.wait_cached(NS, "orphan")
    await env.wait_cached(NS, "foreign")

    rs = await env.create_rs("adopt", 2)
    uid = rs["metadata"]["uid"]
    await env.wait_status("adopt", replicas=2, readyReplicas=2)

    adopted = await get_or_none(env.client, "orphan")
    assert adopted is not None
    assert controller_refs(adopted) == [
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "name": "adopt",
            "uid": uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    untouched = await get_or_none(env.client, "foreign")
    assert untouched is not None and controller_refs(untouched) == [foreign_ref]
    owned = owned_by(await env.pods("adopt"), uid)
    assert len(owned) == 2, "the orphan counts, so only one pod was created"
    assert len(await env.events("adopt", "SuccessfulCreate")) == 1

    # Release: the adopted pod stops matching → its ownerReference is removed and a replacement is made.
    await env.client.patch(PODS, "orphan", {"metadata": {"labels": {"app": "gone"}}}, NS)

    async def released() -> bool:
        pod = await get_or_none(env.client, "orphan")
        return pod is not None and not (pod["metadata"].get("ownerReferences") or [])

    await wait_for(released, 10.0, message="orphan released")
    await env.wait_status("adopt", replicas=2, readyReplicas=2)
    owned = owned_by(await env.pods("adopt"), uid)
    assert len(owned) == 2 and "orphan" not in {p["metadata"]["name"] for p in owned}
    assert await get_or_none(env.client, "foreign") is not None


async def test_deleting_replicaset_stops_creation_and_adoption(env: Env) -> None:
    manifest = rs_manifest("doomed", 2)
    manifest["metadata"]["finalizers"] = ["example.com/hold"]
    await env.client.create(REPLICASETS, manifest, NS)
    pods = await env.wait_pod_count("doomed", 2)
    await env.wait_status("doomed", replicas=2)

    await env.client.delete(REPLICASETS, "doomed", NS)
    assert (await env.rs("doomed"))["metadata"].get("deletionTimestamp")
    await env.client.delete(PODS, pods[0]["metadata"]["name"], NS)
    template = manifest["spec"]["template"]
    orphan = bare_pod("stray", template)
    await env.client.create(PODS, orphan, NS)
    await env.wait_cached(NS, "stray")
    # Status is still written while the ReplicaSet is being deleted; pods are neither made nor adopted.
    await sync_barrier(env, "doomed")
    await env.wait_status("doomed", replicas=1)
    names = await env.pod_names("doomed")
    assert names == {pods[1]["metadata"]["name"], "stray"}
    stray = await get_or_none(env.client, "stray")
    assert stray is not None and not stray["metadata"].get("ownerReferences")
    assert len(await env.events("doomed", "SuccessfulCreate")) == 2

    # Gone for good: a new ReplicaSet with the same name starts with clean expectations.
    await env.client.patch(REPLICASETS, "doomed", {"metadata": {"finalizers": None}}, NS)
    await wait_for(lambda: env.ctl.replicasets.indexer.get(NS, "doomed") is None, 5.0)
    reborn = await env.create_rs("doomed", 1)
    await env.wait_status("doomed", replicas=1)
    stray = await get_or_none(env.client, "stray")
    assert stray is not None and controller_refs(stray)[0]["uid"] == reborn["metadata"]["uid"]


async def test_selector_not_matching_template_is_rejected(env: Env) -> None:
    manifest = rs_manifest("mismatch", 1, selector={"matchLabels": {"app": "other"}})
    with pytest.raises(Invalid) as info:
        await env.client.create(REPLICASETS, manifest, NS)
    assert info.value.status == 422
    assert "`selector` does not match template `labels`" in info.value.message


async def test_refused_template_reports_failure_while_others_are_served(env: Env) -> None:
    # Template metadata is not validated like a pod's: an invalid finalizer name passes in the
    # ReplicaSet and is refused (422) on every pod create.
    refused = rs_manifest("refused", 2)
    refused["spec"]["template"]["metadata"]["finalizers"] = ["example.com/not valid"]
    await env.client.create(REPLICASETS, refused, NS)
    await env.create_rs("healthy", 2)

    async def failure() -> dict[str, Any] | None:
        conditions = (await env.rs("refused")).get("status", {}).get("conditions") or []
        return next((c for c in conditions if c["type"] == "ReplicaFailure"), None)

    condition = await wait_for(failure, 10.0, message="ReplicaFailure condition")
    assert condition["status"] == "True" and condition["reason"] == "FailedCreate"
    assert "is invalid" in condition["message"] and "finalizers" in condition["message"]
    events = await env.events("refused", "FailedCreate")
    assert events and events[0]["type"] == "Warning"
    assert events[0]["message"] == f"Error creating: {condition['message']}"
    await env.wait_status("healthy", replicas=2, readyReplicas=2)
    assert await env.pods("refused") == []
