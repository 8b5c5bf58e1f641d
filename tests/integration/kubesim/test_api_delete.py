"""Deletion over raw HTTP: finalizers, propagationPolicy, DeleteOptions in body or query, pod graceful
deletion (with the simulated kubelet), namespace and deletecollection (preconditions and the GC finalizers
in detail: test_api_finalizers.py and test_api_propagation.py)."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from kubesim import KubeSim
from kubesim.pytest_plugin import KubeSimFactory
from tests.helpers import wait_for
from tests.kubesim_api import Api

Obj = dict[str, Any]
CMS = "/api/v1/namespaces/default/configmaps"
PODS = "/api/v1/namespaces/default/pods"
JOBS = "/apis/batch/v1/namespaces/default/jobs"
RSS = "/apis/apps/v1/namespaces/default/replicasets"


@pytest.fixture
async def sim(kubesim_factory: KubeSimFactory) -> KubeSim:
    return await kubesim_factory(kubelet=False)


def cm(name: str, finalizers: list[str] | None = None) -> Obj:
    meta: Obj = {"name": name}
    if finalizers:
        meta["finalizers"] = finalizers
    return {"metadata": meta, "data": {"k": "v"}}


def job(name: str) -> Obj:
    return {
        "metadata": {"name": name},
        "spec": {
            "template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}
            }
        },
    }


def replicaset(name: str) -> Obj:
    labels = {"app": name}
    return {
        "metadata": {"name": name},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "i"}]},
            },
        },
    }


async def test_plain_delete_returns_status_success(api: Api) -> None:
    created = await api.ok("POST", CMS, cm("d"))
    result = await api.ok("DELETE", f"{CMS}/d")
    assert result == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {"name": "d", "kind": "configmaps", "uid": created["metadata"]["uid"]},
    }
    assert await api.gone(f"{CMS}/d")
    status, payload = await api.call("DELETE", f"{CMS}/d")
    assert status == 404 and payload["message"] == 'configmaps "d" not found'


async def test_finalizers_hold_the_object_until_released(api: Api, sim: KubeSim) -> None:
    await api.ok("POST", CMS, cm("f", ["example.com/hold"]))
    held = await api.ok("DELETE", f"{CMS}/f")
    assert held["kind"] == "ConfigMap"
    meta = held["metadata"]
    assert meta["deletionTimestamp"] and meta["deletionGracePeriodSeconds"] == 0
    again = await api.ok("DELETE", f"{CMS}/f")  # accepted, not re-timestamped
    assert again["metadata"]["deletionTimestamp"] == meta["deletionTimestamp"]
    status, payload = await api.call(
        "PATCH",
        f"{CMS}/f",
        {"metadata": {"finalizers": ["example.com/hold", "new"]}},
        "application/merge-patch+json",
    )
    assert status == 422 and "no new finalizers can be added" in payload["message"]
    rv_before = sim.store.resource_version
    await api.ok("PATCH", f"{CMS}/f", {"metadata": {"finalizers": None}}, "application/merge-patch+json")
    assert await api.gone(f"{CMS}/f")
    assert sim.store.resource_version == rv_before + 1  # one write: the DELETED event


async def test_deletion_timestamp_cannot_be_set_or_cleared_through_update(api: Api) -> None:
    created = await api.ok("POST", CMS, cm("t", ["x/y"]))
    created["metadata"]["deletionTimestamp"] = "2020-01-01T00:00:00Z"
    updated = await api.ok("PUT", f"{CMS}/t", created)
    assert "deletionTimestamp" not in updated["metadata"]
    deleting = await api.ok("DELETE", f"{CMS}/t")
    deleting["metadata"].pop("deletionTimestamp")
    still = await api.ok("PUT", f"{CMS}/t", deleting)
    assert still["metadata"]["deletionTimestamp"]


@pytest.mark.parametrize(
    ("how", "finalizer"),
    [
        ("body-Foreground", "foregroundDeletion"),
        ("query-Foreground", "foregroundDeletion"),
        ("body-Orphan", "orphan"),
        ("query-orphanDependents", "orphan"),
    ],
)
async def test_propagation_policy_adds_gc_finalizers(api: Api, how: str, finalizer: str) -> None:
    await api.ok("POST", RSS, replicaset("rs"))
    where, policy = how.split("-")
    if where == "body":
        result = await api.ok("DELETE", f"{RSS}/rs", {"propagationPolicy": policy})
    elif policy == "orphanDependents":
        result = await api.ok("DELETE", f"{RSS}/rs?orphanDependents=true")
    else:
        result = await api.ok("DELETE", f"{RSS}/rs?propagationPolicy={policy}")
    assert result["metadata"]["finalizers"] == [finalizer]
    assert result["metadata"]["deletionTimestamp"]
    assert result["metadata"]["generation"] == 2  # marking for deletion bumps generation


async def test_background_policy_deletes_now(api: Api) -> None:
    await api.ok("POST", RSS, replicaset("rs"))
    result = await api.ok("DELETE", f"{RSS}/rs", {"propagationPolicy": "Background"})
    assert result["status"] == "Success" and result["details"]["group"] == "apps"
    assert await api.gone(f"{RSS}/rs")


async def test_jobs_default_to_orphan(api: Api) -> None:
    await api.ok("POST", JOBS, job("j"))
    result = await api.ok("DELETE", f"{JOBS}/j")
    assert result["metadata"]["finalizers"] == ["orphan"]
    await api.ok("POST", JOBS, job("k"))
    result = await api.ok("DELETE", f"{JOBS}/k", {"propagationPolicy": "Background"})
    assert result["status"] == "Success"


async def test_bad_propagation_policy_is_422(api: Api) -> None:
    await api.ok("POST", CMS, cm("x"))
    status, payload = await api.call("DELETE", f"{CMS}/x", {"propagationPolicy": "Sometimes"})
    assert status == 422 and payload["reason"] == "Invalid"


async def test_unscheduled_pod_is_deleted_at_once_and_returned(api: Api) -> None:
    await api.ok(
        "POST", PODS, {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    )
    result = await api.ok("DELETE", f"{PODS}/p")
    assert result["kind"] == "Pod" and result["metadata"]["name"] == "p"  # pods return the object
    assert await api.gone(f"{PODS}/p")


async def test_scheduled_pod_is_graceful_and_the_kubelet_removes_it(kubesim: KubeSim) -> None:
    async with aiohttp.ClientSession() as session:
        api = Api(session, kubesim.url)
        pod = {
            "metadata": {"name": "g", "annotations": {"kubesim.aiokcm.io/terminate-seconds": "0.2"}},
            "spec": {"containers": [{"name": "c", "image": "i"}], "restartPolicy": "Always"},
        }
        await api.ok("POST", PODS, pod)

        async def scheduled() -> bool:
            current = await api.ok("GET", f"{PODS}/g")
            return bool(current["spec"].get("nodeName"))

        await wait_for(scheduled, timeout=10, message="pod bound to a node")
        terminating = await api.ok("DELETE", f"{PODS}/g")
        assert terminating["metadata"]["deletionTimestamp"]
        assert terminating["metadata"]["deletionGracePeriodSeconds"] == 30
        assert not await api.gone(f"{PODS}/g")  # still there while the kubelet stops it
        await wait_for(lambda: api.gone(f"{PODS}/g"), timeout=10, message="kubelet removed the pod")


async def test_grace_period_zero_deletes_a_running_pod_now(kubesim: KubeSim) -> None:
    async with aiohttp.ClientSession() as session:
        api = Api(session, kubesim.url)
        await api.ok(
            "POST", PODS, {"metadata": {"name": "z"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
        )

        async def scheduled() -> bool:
            return bool((await api.ok("GET", f"{PODS}/z"))["spec"].get("nodeName"))

        await wait_for(scheduled, timeout=10, message="pod bound")
        await api.ok("DELETE", f"{PODS}/z?gracePeriodSeconds=0")
        assert await api.gone(f"{PODS}/z")


async def test_namespace_deletion_terminates_then_removes(api: Api) -> None:
    await api.ok("POST", "/api/v1/namespaces", {"metadata": {"name": "doomed"}})
    await api.ok("POST", "/api/v1/namespaces/doomed/configmaps", cm("a"))
    await api.ok("POST", "/api/v1/namespaces/doomed/configmaps", cm("held", ["x/y"]))
    result = await api.ok("DELETE", "/api/v1/namespaces/doomed")
    assert result["status"]["phase"] == "Terminating"
    status, payload = await api.call("POST", "/api/v1/namespaces/doomed/configmaps", cm("late"))
    assert status == 403 and payload["reason"] == "Forbidden"
    assert "because it is being terminated" in payload["message"]
    # Emptying the namespace is the namespace controller's job, not the API server's.
    kept = await api.ok("GET", "/api/v1/namespaces/doomed/configmaps/a")
    assert "deletionTimestamp" not in kept["metadata"]
    namespace = await api.ok("GET", "/api/v1/namespaces/doomed")
    assert namespace["metadata"]["deletionTimestamp"] and namespace["spec"]["finalizers"] == ["kubernetes"]
    # A main-resource PUT cannot drop the finalizer; only /finalize can.
    namespace["spec"]["finalizers"] = []
    updated = await api.ok("PUT", "/api/v1/namespaces/doomed", namespace)
    assert updated["spec"]["finalizers"] == ["kubernetes"]
    await api.ok("PUT", "/api/v1/namespaces/doomed/finalize", {**updated, "spec": {}})  # Go omits []
    assert await api.gone("/api/v1/namespaces/doomed")


async def test_namespace_finalize_writes_only_spec_finalizers(api: Api) -> None:
    created = await api.ok(
        "POST",
        "/api/v1/namespaces",
        {"metadata": {"name": "held", "finalizers": ["x/y"]}, "spec": {"finalizers": ["a/b"]}},
    )
    assert created["spec"]["finalizers"] == ["a/b", "kubernetes"]  # appended on create
    await api.ok("DELETE", "/api/v1/namespaces/held")
    sent = await api.ok("GET", "/api/v1/namespaces/held")
    sent["metadata"]["labels"]["extra"] = "ignored"
    sent["status"] = {"phase": "Active"}
    sent["spec"]["finalizers"] = ["a/b"]
    result = await api.ok("PUT", "/api/v1/namespaces/held/finalize", sent)
    assert result["spec"]["finalizers"] == ["a/b"]
    assert "extra" not in result["metadata"]["labels"] and result["status"]["phase"] == "Terminating"
    result["spec"]["finalizers"] = []
    result = await api.ok("PUT", "/api/v1/namespaces/held/finalize", result)
    assert "finalizers" not in result["spec"]
    assert not await api.gone("/api/v1/namespaces/held")  # metadata.finalizers still hold it
    await api.ok(
        "PATCH",
        "/api/v1/namespaces/held",
        {"metadata": {"finalizers": None}},
        "application/merge-patch+json",
    )
    assert await api.gone("/api/v1/namespaces/held")


async def test_delete_collection_with_selector(api: Api) -> None:
    for name, app in (("a", "x"), ("b", "x"), ("c", "y")):
        await api.ok("POST", CMS, {"metadata": {"name": name, "labels": {"app": app}}})
    result = await api.ok("DELETE", f"{CMS}?labelSelector=app%3Dx")
    assert result["kind"] == "ConfigMapList" and len(result["items"]) == 2
    remaining = await api.ok("GET", CMS)
    assert [i["metadata"]["name"] for i in remaining["items"]] == ["c"]


async def test_binding_assigns_a_node_once(api: Api) -> None:
    await api.ok(
        "POST", PODS, {"metadata": {"name": "b"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    )
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "b"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "node-a"},
    }
    result = await api.ok("POST", f"{PODS}/b/binding", binding)
    assert result["status"] == "Success" and result["code"] == 201
    pod = await api.ok("GET", f"{PODS}/b")
    assert pod["spec"]["nodeName"] == "node-a"
    assert {"type": "PodScheduled", "status": "True"}.items() <= pod["status"]["conditions"][0].items()
    status, payload = await api.call("POST", f"{PODS}/b/binding", binding)
    assert status == 409 and 'already assigned to node "node-a"' in payload["message"]
    status, _ = await api.call("GET", f"{PODS}/b/binding")
    assert status == 405


async def test_eviction_deletes_through_delete_options(api: Api) -> None:
    await api.ok(
        "POST",
        PODS,
        {
            "metadata": {"name": "e", "finalizers": ["x/y"]},
            "spec": {"containers": [{"name": "c", "image": "i"}]},
        },
    )
    eviction = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "e"},
        "deleteOptions": {"gracePeriodSeconds": 0},
    }
    result = await api.ok("POST", f"{PODS}/e/eviction", eviction)
    assert result["code"] == 201
    assert (await api.ok("GET", f"{PODS}/e"))["metadata"]["deletionTimestamp"]  # held by its finalizer
    status, _ = await api.call("POST", f"{PODS}/missing/eviction", eviction)
    assert status == 404


async def test_events_expire_after_the_ttl_since_their_last_write(kubesim_factory: KubeSimFactory) -> None:
    now = [1_700_000_000.0]
    sim = await kubesim_factory(kubelet=False, event_ttl=60.0, clock=lambda: now[0])
    assert sim.event_expiry is not None
    events = "/api/v1/namespaces/default/events"
    body = {
        "metadata": {"name": "e"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
        "reason": "R",
        "message": "m",
        "type": "Normal",
    }
    async with aiohttp.ClientSession() as session:
        api = Api(session, sim.url)
        await api.ok("POST", events, body)
        await api.ok("POST", events, dict(body, metadata={"name": "fresh"}))
        now[0] += 45
        await api.ok("PATCH", f"{events}/fresh", {"message": "again"}, "application/merge-patch+json")
        now[0] += 30  # "e" is 75 s old, "fresh" was rewritten 30 s ago
        assert sim.event_expiry.sweep() == 1
        assert await api.gone(f"{events}/e")
        assert not await api.gone(f"{events}/fresh")


async def test_services_have_no_deletecollection(api: Api) -> None:
    """As upstream, whose services storage has no DeleteCollection: not in discovery, 405 to a collection
    DELETE (the namespace controller then deletes services one by one), nothing deleted."""
    services = "/api/v1/namespaces/default/services"
    spec = {"ports": [{"port": 80}], "selector": {"app": "x"}}
    assert (await api.call("POST", services, {"metadata": {"name": "svc"}, "spec": spec}))[0] == 201
    status, body = await api.call("DELETE", services)
    assert status == 405, body
    assert (body["reason"], body["message"]) == (
        "MethodNotAllowed",
        "the server does not allow this method on the requested resource",
    )
    assert (await api.call("GET", f"{services}/svc"))[0] == 200
    _, discovery = await api.call("GET", "/api/v1")
    verbs = {r["name"]: r["verbs"] for r in discovery["resources"]}
    assert sorted(verbs["services"]) == ["create", "delete", "get", "list", "patch", "update", "watch"]
    assert "deletecollection" in verbs["configmaps"]
    assert (await api.call("DELETE", CMS))[0] == 200
