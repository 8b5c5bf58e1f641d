"""Status and scale subresources, generation rules per type, Lease MicroTime strictness, managedFields."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from kubesim import KubeSim
from kubesim.pytest_plugin import KubeSimFactory
from tests.helpers import wait_for
from tests.kubesim_api import Api

Obj = dict[str, Any]
DEPLOYS = "/apis/apps/v1/namespaces/default/deployments"
RSS = "/apis/apps/v1/namespaces/default/replicasets"
JOBS = "/apis/batch/v1/namespaces/default/jobs"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"
MERGE = "application/merge-patch+json"


@pytest.fixture
async def sim(kubesim_factory: KubeSimFactory) -> KubeSim:
    return await kubesim_factory(kubelet=False)


def deployment(name: str, replicas: int = 1) -> Obj:
    labels = {"app": name}
    return {
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "i"}]},
            },
        },
        "status": {"replicas": 99},
    }


async def test_create_drops_status_and_sets_generation(api: Api) -> None:
    created = await api.ok("POST", DEPLOYS, deployment("d"))
    assert created["metadata"]["generation"] == 1
    assert created.get("status", {}).get("replicas") != 99


async def test_main_resource_ignores_status_and_status_ignores_spec(api: Api) -> None:
    created = await api.ok("POST", RSS, deployment("rs"))
    created["status"] = {"replicas": 5}
    created["spec"]["replicas"] = 3
    updated = await api.ok("PUT", f"{RSS}/rs", created)
    assert updated["spec"]["replicas"] == 3 and updated.get("status", {}).get("replicas") != 5
    assert updated["metadata"]["generation"] == 2
    updated["status"] = {"replicas": 7}
    updated["spec"]["replicas"] = 10
    via_status = await api.ok("PUT", f"{RSS}/rs/status", updated)
    assert via_status["status"]["replicas"] == 7 and via_status["spec"]["replicas"] == 3
    assert via_status["metadata"]["generation"] == 2  # status writes never bump generation
    patched = await api.ok("PATCH", f"{RSS}/rs/status", {"status": {"readyReplicas": 1}}, MERGE)
    assert patched["status"] == {"replicas": 7, "readyReplicas": 1}
    status, payload = await api.call("PUT", f"{RSS}/rs/status", created)  # stale RV on /status
    assert status == 409 and payload["reason"] == "Conflict"
    fetched = await api.ok("GET", f"{RSS}/rs/status")
    assert fetched["status"]["readyReplicas"] == 1


async def test_generation_rules(api: Api) -> None:
    await api.ok("POST", DEPLOYS, deployment("d"))
    labelled = await api.ok("PATCH", f"{DEPLOYS}/d", {"metadata": {"labels": {"x": "y"}}}, MERGE)
    assert labelled["metadata"]["generation"] == 1  # metadata-only change
    annotated = await api.ok("PATCH", f"{DEPLOYS}/d", {"metadata": {"annotations": {"a": "b"}}}, MERGE)
    assert annotated["metadata"]["generation"] == 2  # deployments: annotations bump too
    await api.ok("POST", RSS, deployment("rs"))
    rs = await api.ok("PATCH", f"{RSS}/rs", {"metadata": {"annotations": {"a": "b"}}}, MERGE)
    assert rs["metadata"]["generation"] == 1  # replicasets: they don't
    annotated["metadata"]["generation"] = 42  # clients cannot set it
    annotated["metadata"].pop("resourceVersion")
    forced = await api.ok("PUT", f"{DEPLOYS}/d", annotated)
    assert forced["metadata"]["generation"] == 2
    cm = await api.ok("POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "c"}})
    assert "generation" not in cm["metadata"]


async def test_scale_subresource(api: Api, sim: KubeSim) -> None:
    created = await api.ok("POST", DEPLOYS, deployment("d", 2))
    scale = await api.ok("GET", f"{DEPLOYS}/d/scale")
    assert scale["kind"] == "Scale" and scale["apiVersion"] == "autoscaling/v1"
    assert scale["metadata"]["uid"] == created["metadata"]["uid"]
    assert scale["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert scale["spec"] == {"replicas": 2} and scale["status"]["selector"] == "app=d"
    watch = sim.store.watch("deployments.apps")
    scaled = await api.ok("PATCH", f"{DEPLOYS}/d/scale", {"spec": {"replicas": 5}}, MERGE)
    assert scaled["spec"]["replicas"] == 5
    event = await anext(aiter(watch))
    watch.close()
    assert event.type == "MODIFIED" and event.obj["spec"]["replicas"] == 5
    assert event.obj["metadata"]["generation"] == 2
    scale = await api.ok("GET", f"{DEPLOYS}/d/scale")
    scale["spec"]["replicas"] = 1
    assert (await api.ok("PUT", f"{DEPLOYS}/d/scale", scale))["spec"]["replicas"] == 1
    status, payload = await api.call("PUT", f"{DEPLOYS}/d/scale", scale)  # stale RV
    assert status == 409
    status, payload = await api.call("PATCH", f"{DEPLOYS}/d/scale", {"spec": {"replicas": -1}}, MERGE)
    assert status == 422 and payload["reason"] == "Invalid"
    status, _ = await api.call("GET", f"{JOBS}/j/scale")
    assert status == 404  # jobs have no scale subresource


def lease(renew: str) -> Obj:
    return {
        "metadata": {"name": "leader"},
        "spec": {
            "holderIdentity": "me",
            "leaseDurationSeconds": 15,
            "acquireTime": "2024-01-01T00:00:00.000000Z",
            "renewTime": renew,
        },
    }


@pytest.mark.parametrize("renew", ["2024-01-01T00:00:00.123456Z", "2024-01-01T00:00:00.123456+02:00"])
async def test_lease_micro_time_accepted(api: Api, renew: str) -> None:
    created = await api.ok("POST", LEASES, lease(renew))
    assert created["spec"]["renewTime"] == renew
    assert "generation" not in created["metadata"]


@pytest.mark.parametrize(
    "renew", ["2024-01-01T00:00:00Z", "2024-01-01T00:00:00.123Z", "2024-01-01T00:00:00.1234567Z", "yesterday"]
)
async def test_lease_micro_time_strictness(api: Api, renew: str) -> None:
    status, payload = await api.call("POST", LEASES, lease(renew))
    assert status == 400 and payload["reason"] == "BadRequest"
    assert payload["message"].startswith('Lease in version "v1" cannot be handled as a Lease')
    assert '"2006-01-02T15:04:05.000000Z07:00"' in payload["message"]


async def test_leader_election_has_exactly_one_winner(api: Api) -> None:
    created = await api.ok("POST", LEASES, lease("2024-01-01T00:00:00.000000Z"))
    first = dict(created, spec=dict(created["spec"], holderIdentity="a"))
    second = dict(created, spec=dict(created["spec"], holderIdentity="b"))
    results = [await api.call("PUT", f"{LEASES}/leader", body) for body in (first, second)]
    assert sorted(status for status, _ in results) == [200, 409]


async def test_managed_fields_follow_field_manager_and_apply(api: Api) -> None:
    cms = "/api/v1/namespaces/default/configmaps"
    created = await api.ok(
        "POST", f"{cms}?fieldManager=tester", {"metadata": {"name": "m"}, "data": {"a": "b"}}
    )
    entries = created["metadata"]["managedFields"]
    assert [(e["manager"], e["operation"]) for e in entries] == [("tester", "Update")]
    assert entries[0]["fieldsV1"] == {"f:data": {".": {}, "f:a": {}}}
    applied = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s"}, "data": {"a": "1"}}
    apply_ct = "application/apply-patch+yaml"
    first = await api.ok("PATCH", f"{cms}/s?fieldManager=one", applied, apply_ct)
    assert [(e["manager"], e["operation"]) for e in first["metadata"]["managedFields"]] == [("one", "Apply")]
    conflicting = dict(applied, data={"a": "2"})
    status, payload = await api.call("PATCH", f"{cms}/s?fieldManager=two", conflicting, apply_ct)
    assert status == 409 and payload["details"]["causes"][0]["reason"] == "FieldManagerConflict"
    assert payload["message"] == 'Apply failed with 1 conflict: conflict with "one": .data.a'
    forced = await api.ok("PATCH", f"{cms}/s?fieldManager=two&force=true", conflicting, apply_ct)
    assert forced["data"] == {"a": "2"}
    assert {e["manager"] for e in forced["metadata"]["managedFields"]} == {"two"}


async def test_event_time_is_micro_time_too(api: Api) -> None:
    event = {
        "metadata": {"name": "e"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
        "reason": "R",
        "message": "m",
        "type": "Normal",
        "eventTime": "2024-01-01T00:00:00Z",
        "reportingComponent": "x",
        "reportingInstance": "y",
        "action": "A",
    }
    status, payload = await api.call("POST", "/api/v1/namespaces/default/events", event)
    assert status == 400 and 'cannot parse "Z" as ".000000"' in payload["message"]
    event["eventTime"] = "2024-01-01T00:00:00.000001Z"
    await api.ok("POST", "/api/v1/namespaces/default/events", event)


async def test_pod_log_tells_what_the_simulated_kubelet_did(kubesim: KubeSim) -> None:
    pods = "/api/v1/namespaces/default/pods"
    pod = {
        "metadata": {
            "name": "l",
            "annotations": {"kubesim.aiokcm.io/run-seconds": "0.1", "kubesim.aiokcm.io/exit-code": "3"},
        },
        "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]},
    }
    async with aiohttp.ClientSession() as session:
        api = Api(session, kubesim.url)
        await api.ok("POST", pods, pod)

        async def finished() -> bool:
            phase: str | None = (await api.ok("GET", f"{pods}/l"))["status"].get("phase")
            return phase == "Failed"

        await wait_for(finished, timeout=10, message="pod failed")
        async with session.get(f"{kubesim.url}{pods}/l/log") as resp:
            assert resp.status == 200 and resp.content_type == "text/plain"
            assert (
                (await resp.text()).splitlines()[-1].startswith("kubesim: container main exited with code 3")
            )
        async with session.get(f"{kubesim.url}{pods}/l/log?container=other") as resp:
            assert resp.status == 400 and "is not valid for pod l" in (await resp.json())["message"]
