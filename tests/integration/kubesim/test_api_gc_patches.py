"""The patches the garbage collector sends, over real HTTP: a strategic merge patch deleting an
ownerReference by uid (its patch merge key) with the dependent's uid in it, 415 for that patch on a custom
resource (the collector then falls back to a JSON merge patch carrying resourceVersion as a precondition),
and how a uid that no longer matches fails: 422 (immutable) for a PATCH, 409 (precondition) for a PUT."""

from __future__ import annotations

from typing import Any

import pytest

from kubesim import KubeSim
from kubesim.pytest_plugin import KubeSimFactory
from tests.helpers import schemaless_crd
from tests.kubesim_api import Api

Obj = dict[str, Any]
PODS = "/api/v1/namespaces/default/pods"
CMS = "/api/v1/namespaces/default/configmaps"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
GIZMOS = "/apis/example.com/v1/namespaces/default/gizmos"
SMP = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"
METADATA = {"Accept": "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"}
OWNER_A = {
    "apiVersion": "apps/v1",
    "kind": "ReplicaSet",
    "name": "a",
    "uid": "uid-a",
    "blockOwnerDeletion": True,
}
OWNER_B = {"apiVersion": "batch/v1", "kind": "Job", "name": "b", "uid": "uid-b", "controller": True}


@pytest.fixture
async def sim(kubesim_factory: KubeSimFactory) -> KubeSim:
    return await kubesim_factory(kubelet=False)


def gizmo_crd() -> Obj:
    return schemaless_crd("example.com", "Gizmo")


async def owned_pod(api: Api) -> Obj:
    meta = {"name": "dep", "ownerReferences": [OWNER_A, OWNER_B]}
    pod: Obj = await api.ok(
        "POST", PODS, {"metadata": meta, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    )
    return pod


def delete_owner_patch(dependent_uid: str, *owner_uids: str) -> bytes:
    """Byte for byte what garbagecollector.deleteOwnerRefStrategicMergePatch builds."""
    pieces = ",".join(f'{{"$patch":"delete","uid":"{uid}"}}' for uid in owner_uids)
    return f'{{"metadata":{{"ownerReferences":[{pieces}],"uid":"{dependent_uid}"}}}}'.encode()


async def test_smp_deletes_an_owner_reference_by_uid(api: Api) -> None:
    pod = await owned_pod(api)
    raw = delete_owner_patch(pod["metadata"]["uid"], "uid-a")
    patched = await api.ok("PATCH", f"{PODS}/dep", None, SMP, raw=raw, headers=METADATA)
    assert patched["kind"] == "PartialObjectMetadata"
    assert patched["metadata"]["ownerReferences"] == [OWNER_B]
    assert patched["metadata"]["uid"] == pod["metadata"]["uid"]
    raw = delete_owner_patch(pod["metadata"]["uid"], "uid-b", "uid-missing")  # unknown uids are no-ops
    patched = await api.ok("PATCH", f"{PODS}/dep", None, SMP, raw=raw)
    assert "ownerReferences" not in patched["metadata"]


async def test_smp_unblocks_owner_references_merging_by_uid(api: Api) -> None:
    pod = await owned_pod(api)
    unblocked = dict(OWNER_A, blockOwnerDeletion=False)
    patch = {"metadata": {"ownerReferences": [unblocked], "uid": pod["metadata"]["uid"]}}
    patched = await api.ok("PATCH", f"{PODS}/dep", patch, SMP)
    assert patched["metadata"]["ownerReferences"] == [unblocked, OWNER_B]


async def test_smp_with_a_stale_uid_is_refused(api: Api) -> None:
    pod = await owned_pod(api)
    raw = delete_owner_patch("uid-of-a-deleted-namesake", "uid-a")
    status, payload = await api.call("PATCH", f"{PODS}/dep", None, SMP, raw=raw)
    assert status == 422 and payload["reason"] == "Invalid"
    assert payload["message"] == (
        'Pod "dep" is invalid: metadata.uid: Invalid value: "uid-of-a-deleted-namesake": field is immutable'
    )
    assert payload["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "uid-of-a-deleted-namesake": field is immutable',
            "field": "metadata.uid",
        }
    ]
    current = await api.ok("GET", f"{PODS}/dep")
    assert current["metadata"]["ownerReferences"] == [OWNER_A, OWNER_B]
    assert current["metadata"]["resourceVersion"] == pod["metadata"]["resourceVersion"]


async def test_put_with_a_stale_uid_is_a_precondition_conflict(api: Api) -> None:
    pod = await owned_pod(api)
    status, payload = await api.call("PUT", f"{PODS}/dep", dict(pod, metadata=dict(pod["metadata"], uid="x")))
    assert status == 409 and payload["reason"] == "Conflict"
    assert payload["message"] == (
        f'Operation cannot be fulfilled on pods "dep": Precondition failed: UID in precondition: x, '
        f"UID in object meta: {pod['metadata']['uid']}"
    )


async def test_smp_on_a_custom_resource_is_unsupported(api: Api) -> None:
    await api.ok("POST", CRDS, gizmo_crd())
    gizmo = {"apiVersion": "example.com/v1", "kind": "Gizmo", "metadata": {"name": "g"}}
    created = await api.ok("POST", GIZMOS, gizmo)
    raw = delete_owner_patch(created["metadata"]["uid"], "uid-a")
    status, payload = await api.call("PATCH", f"{GIZMOS}/g", None, SMP, raw=raw)
    assert status == 415 and payload["reason"] == "UnsupportedMediaType"
    assert payload["message"] == (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    )
    status, payload = await api.call("PATCH", f"{GIZMOS}/g", {}, "text/plain")
    assert status == 415 and payload["message"].endswith("application/apply-patch+yaml")


@pytest.mark.parametrize("path", [CMS, GIZMOS])
async def test_merge_patch_resource_version_is_a_precondition(api: Api, path: str) -> None:
    """The collector's JSON merge patches (finalizers, ownerReferences) carry the resourceVersion it read."""
    await api.ok("POST", CRDS, gizmo_crd())
    body = {"apiVersion": "example.com/v1", "kind": "Gizmo"} if path == GIZMOS else {}
    meta = {"name": "m", "finalizers": ["orphan", "example.com/hold"], "ownerReferences": [OWNER_A, OWNER_B]}
    created = await api.ok("POST", path, body | {"metadata": meta})
    read_rv = created["metadata"]["resourceVersion"]
    await api.ok("PATCH", f"{path}/m", {"metadata": {"labels": {"moved": "on"}}}, MERGE)
    stale = {"metadata": {"resourceVersion": read_rv, "finalizers": ["example.com/hold"]}}
    status, payload = await api.call("PATCH", f"{path}/m", stale, MERGE)
    assert status == 409 and payload["reason"] == "Conflict"
    assert payload["message"].endswith(
        '"m": the object has been modified; please apply your changes to the latest version and try again'
    )
    current = await api.ok("GET", f"{path}/m")
    fresh_rv = current["metadata"]["resourceVersion"]
    fresh = {"metadata": {"resourceVersion": fresh_rv, "finalizers": ["example.com/hold"]}}
    assert (await api.ok("PATCH", f"{path}/m", fresh, MERGE))["metadata"]["finalizers"] == [
        "example.com/hold"
    ]
    refs = {"metadata": {"resourceVersion": read_rv, "ownerReferences": [OWNER_B]}}
    assert (await api.call("PATCH", f"{path}/m", refs, MERGE))[0] == 409
