"""NamespaceLifecycle admission over real HTTP: no create of any kind (events, subresource creates and
generateName included) in a Terminating namespace, answered 403 with the NamespaceTerminating cause.
The namespace is held Terminating by a finalizer of its own, whoever empties it."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from kubesim import KubeSim
from kubesim.pytest_plugin import KubeSimFactory
from tests.kubesim_api import Api

Obj = dict[str, Any]
NS = "ending"
BASE = f"/api/v1/namespaces/{NS}"
HOLD = "example.com/hold"
CAUSE = {
    "reason": "NamespaceTerminating",
    "message": f"namespace {NS} is being terminated",
    "field": "metadata.namespace",
}


@pytest.fixture
async def sim(kubesim_factory: KubeSimFactory) -> KubeSim:
    return await kubesim_factory(kubelet=False)


@pytest.fixture
async def terminating(api: Api) -> Obj:
    """A Terminating namespace holding a configmap (kept by its own finalizer) created before the delete."""
    await api.ok("POST", "/api/v1/namespaces", {"metadata": {"name": NS, "finalizers": [HOLD]}})
    await api.ok("POST", f"{BASE}/configmaps", {"metadata": {"name": "old", "finalizers": [HOLD]}})
    deleting: Obj = await api.ok("DELETE", f"/api/v1/namespaces/{NS}")
    assert deleting["status"]["phase"] == "Terminating" and deleting["metadata"]["deletionTimestamp"]
    return deleting


def forbidden(resource: str, name: str, group: str = "") -> Obj:
    details: Obj = (
        {"name": name, "group": group, "kind": resource} if group else {"name": name, "kind": resource}
    )
    qualified = f"{resource}.{group}" if group else resource
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'{qualified} "{name}" is forbidden: unable to create new content in namespace {NS} '
        "because it is being terminated",
        "reason": "Forbidden",
        "details": details | {"causes": [CAUSE]},
        "code": 403,
    }


@pytest.mark.usefixtures("terminating")
async def test_creates_are_forbidden_with_the_namespace_terminating_cause(api: Api) -> None:
    job_spec = {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}}
    cases: list[tuple[str, Obj, Obj]] = [
        (f"{BASE}/configmaps", {"metadata": {"name": "new"}}, forbidden("configmaps", "new")),
        (f"{BASE}/configmaps", {"metadata": {"generateName": "gen-"}}, forbidden("configmaps", "gen-")),
        (f"{BASE}/configmaps", {"metadata": {}}, forbidden("configmaps", "Unknown")),  # before validation
        (
            f"/apis/batch/v1/namespaces/{NS}/jobs",
            {"metadata": {"name": "j"}, "spec": job_spec},
            forbidden("jobs", "j", "batch"),
        ),
        (
            f"{BASE}/events",
            {"metadata": {"name": "e"}, "involvedObject": {"name": "x"}, "reason": "R"},
            forbidden("events", "e"),
        ),
        (
            f"/apis/events.k8s.io/v1/namespaces/{NS}/events",
            {"metadata": {"name": "e2"}, "eventTime": "2024-01-01T00:00:00.000000Z"},
            forbidden("events", "e2", "events.k8s.io"),
        ),
        (
            f"{BASE}/pods/p/binding",
            {"metadata": {"name": "p"}, "target": {"kind": "Node", "name": "n"}},
            forbidden("pods", "p"),
        ),
        (
            f"{BASE}/pods/p/eviction",
            {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "p"}},
            forbidden("pods", "p"),
        ),
    ]
    for path, body, expected in cases:
        status, payload = await api.call("POST", path, body)
        assert (status, payload) == (403, expected), path
    apply = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"}}
    raw = orjson.dumps(apply)
    status, payload = await api.call(
        "PATCH", f"{BASE}/configmaps/applied?fieldManager=t", None, "application/apply-patch+yaml", raw=raw
    )
    assert (status, payload) == (403, forbidden("configmaps", "applied"))  # apply creating is a create


@pytest.mark.usefixtures("terminating")
async def test_updates_deletes_and_access_reviews_still_work(api: Api) -> None:
    patch = {"metadata": {"labels": {"still": "writable"}}}
    updated = await api.ok("PATCH", f"{BASE}/configmaps/old", patch, "application/merge-patch+json")
    assert updated["metadata"]["labels"] == {"still": "writable"}
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "LocalSubjectAccessReview",
        "spec": {"user": "u", "resourceAttributes": {"namespace": NS, "verb": "get", "resource": "pods"}},
    }
    await api.ok("POST", f"/apis/authorization.k8s.io/v1/namespaces/{NS}/localsubjectaccessreviews", review)
    # kubesim, like kube-apiserver, does not empty the namespace: deleting its content is the client's part
    held = await api.ok("DELETE", f"{BASE}/configmaps/old")
    assert held["metadata"]["deletionTimestamp"]
    await api.ok(
        "PATCH", f"{BASE}/configmaps/old", {"metadata": {"finalizers": None}}, "application/merge-patch+json"
    )
    assert await api.gone(f"{BASE}/configmaps/old")
    namespace = await api.ok("GET", f"/api/v1/namespaces/{NS}")
    assert namespace["status"]["phase"] == "Terminating"  # its own finalizer still holds it


async def test_a_missing_namespace_is_not_found(api: Api) -> None:
    status, payload = await api.call(
        "POST", "/api/v1/namespaces/nowhere/configmaps", {"metadata": {"name": "c"}}
    )
    assert status == 404 and payload["message"] == 'namespaces "nowhere" not found'


@pytest.mark.usefixtures("terminating")
async def test_official_client_sees_the_cause(sim: KubeSim) -> None:
    api_client = await asyncio.to_thread(config.new_client_from_config, config_file=sim.kubeconfig)
    try:
        core = client.CoreV1Api(api_client)
        body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="late"))
        with pytest.raises(ApiException) as err:
            await asyncio.to_thread(core.create_namespaced_config_map, NS, body)
        assert err.value.status == 403 and err.value.body is not None
        assert orjson.loads(err.value.body)["details"]["causes"] == [CAUSE]
    finally:
        await asyncio.to_thread(api_client.close)
