"""Create/get/update/patch over raw HTTP: metadata rules, conflicts, dry run, client quirks and bad input."""

from __future__ import annotations

import re
from typing import Any

import aiohttp
import orjson
import pytest

from kubesim import KubeSim
from kubesim.pytest_plugin import KubeSimFactory
from tests.kubesim_api import Api

Obj = dict[str, Any]
CMS = "/api/v1/namespaces/default/configmaps"
PODS = "/api/v1/namespaces/default/pods"
DEPLOYS = "/apis/apps/v1/namespaces/default/deployments"


@pytest.fixture
async def sim(kubesim_factory: KubeSimFactory) -> KubeSim:
    return await kubesim_factory(kubelet=False, seed=1)


def cm(name: str, **data: str) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data or {"k": "v"}}


def status_of(payload: Obj, code: int, reason: str) -> str:
    assert payload["kind"] == "Status" and payload["status"] == "Failure", payload
    assert (payload["code"], payload["reason"]) == (code, reason), payload
    return str(payload["message"])


async def test_create_sets_server_fields_and_get_returns_it(api: Api) -> None:
    created = await api.ok("POST", CMS, cm("c1"))
    meta = created["metadata"]
    assert re.fullmatch(r"[0-9a-f-]{36}", meta["uid"])
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", meta["creationTimestamp"])
    assert meta["namespace"] == "default" and int(meta["resourceVersion"]) > 0
    assert "generation" not in meta  # configmaps have no generation
    assert await api.ok("GET", f"{CMS}/c1") == created


async def test_generate_name_uses_the_apiserver_alphabet(api: Api) -> None:
    created = await api.ok("POST", CMS, {"metadata": {"generateName": "gen-"}, "data": {}})
    assert re.fullmatch(r"gen-[bcdfghjklmnpqrstvwxz2456789]{5}", created["metadata"]["name"])


async def test_missing_name_is_422(api: Api) -> None:
    status, payload = await api.call("POST", CMS, {"metadata": {}})
    message = status_of(payload, 422, "Invalid")
    assert status == 422
    assert (
        message == 'ConfigMap "" is invalid: metadata.name: Required value: name or generateName is required'
    )
    assert payload["details"]["causes"][0]["field"] == "metadata.name"


async def test_duplicate_create_is_409_already_exists(api: Api) -> None:
    await api.ok("POST", CMS, cm("dup"))
    status, payload = await api.call("POST", CMS, cm("dup"))
    assert status == 409
    assert status_of(payload, 409, "AlreadyExists") == 'configmaps "dup" already exists'
    assert payload["details"] == {"name": "dup", "kind": "configmaps"}


async def test_not_found_messages_name_the_resource_and_group(api: Api) -> None:
    status, payload = await api.call("GET", f"{CMS}/nope")
    assert status == 404 and status_of(payload, 404, "NotFound") == 'configmaps "nope" not found'
    status, payload = await api.call("GET", f"{DEPLOYS}/nope")
    assert status_of(payload, 404, "NotFound") == 'deployments.apps "nope" not found'
    assert payload["details"] == {"name": "nope", "group": "apps", "kind": "deployments"}


async def test_namespace_rules(api: Api) -> None:
    status, payload = await api.call("POST", "/api/v1/namespaces/ghost/configmaps", cm("x"))
    assert status == 404 and status_of(payload, 404, "NotFound") == 'namespaces "ghost" not found'
    body = cm("x")
    body["metadata"]["namespace"] = "kube-system"
    status, payload = await api.call("POST", CMS, body)
    assert status == 400 and "does not match the namespace" in status_of(payload, 400, "BadRequest")


async def test_put_with_stale_resource_version_is_409(api: Api) -> None:
    created = await api.ok("POST", CMS, cm("c"))
    updated = dict(created, data={"k": "2"})
    fresh = await api.ok("PUT", f"{CMS}/c", updated)
    assert int(fresh["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    status, payload = await api.call("PUT", f"{CMS}/c", dict(created, data={"k": "3"}))
    assert status == 409
    assert status_of(payload, 409, "Conflict") == (
        'Operation cannot be fulfilled on configmaps "c": the object has been modified; please apply your '
        "changes to the latest version and try again"
    )


async def test_put_without_resource_version_is_unconditional_for_builtins(api: Api) -> None:
    await api.ok("POST", CMS, cm("c"))
    result = await api.ok("PUT", f"{CMS}/c", cm("c", k="unconditional"))
    assert result["data"] == {"k": "unconditional"}


async def test_put_name_mismatch_is_400(api: Api) -> None:
    await api.ok("POST", CMS, cm("x"))
    status, payload = await api.call("PUT", f"{CMS}/x", cm("y"))
    assert status == 400
    assert (
        status_of(payload, 400, "BadRequest")
        == "the name of the object (y) does not match the name on the URL (x)"
    )


async def test_put_of_missing_object_is_404(api: Api) -> None:
    status, _ = await api.call("PUT", f"{CMS}/absent", cm("absent"))
    assert status == 404


async def test_noop_write_keeps_resource_version_and_emits_no_event(api: Api, sim: KubeSim) -> None:
    created = await api.ok("POST", CMS, cm("same"))
    rv = sim.store.resource_version
    again = await api.ok("PUT", f"{CMS}/same", created)
    assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    patched = await api.ok(
        "PATCH", f"{CMS}/same", {"data": {"k": "v"}}, content_type="application/merge-patch+json"
    )
    assert patched["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert sim.store.resource_version == rv


async def test_merge_patch_and_resource_version_precondition(api: Api) -> None:
    created = await api.ok("POST", CMS, cm("p"))
    patched = await api.ok(
        "PATCH", f"{CMS}/p", {"data": {"x": "y"}}, content_type="application/merge-patch+json"
    )
    assert patched["data"] == {"k": "v", "x": "y"}
    stale = {"metadata": {"resourceVersion": created["metadata"]["resourceVersion"]}, "data": {"z": "1"}}
    status, payload = await api.call("PATCH", f"{CMS}/p", stale, content_type="application/merge-patch+json")
    assert status == 409 and status_of(payload, 409, "Conflict")


async def test_patch_of_missing_object_is_404_and_unknown_patch_type_415(api: Api) -> None:
    status, _ = await api.call("PATCH", f"{CMS}/nope", {}, content_type="application/merge-patch+json")
    assert status == 404
    await api.ok("POST", CMS, cm("p"))
    status, payload = await api.call("PATCH", f"{CMS}/p", {}, content_type="text/plain")
    assert status == 415 and status_of(payload, 415, "UnsupportedMediaType")


async def test_force_on_non_apply_patch_is_422(api: Api) -> None:
    await api.ok("POST", CMS, cm("p"))
    status, payload = await api.call(
        "PATCH", f"{CMS}/p?force=true", {}, content_type="application/merge-patch+json"
    )
    assert status == 422 and "force" in status_of(payload, 422, "Invalid")


async def test_server_side_apply_requires_field_manager_and_creates(api: Api) -> None:
    body = cm("applied")
    status, payload = await api.call(
        "PATCH", f"{CMS}/applied", body, content_type="application/apply-patch+yaml"
    )
    assert status == 422
    assert "fieldManager: Required value" in status_of(payload, 422, "Invalid")
    status, payload = await api.call(
        "PATCH", f"{CMS}/applied?fieldManager=me", body, content_type="application/apply-patch+yaml"
    )
    assert status == 201 and payload["metadata"]["name"] == "applied"


async def test_dry_run_stores_nothing(api: Api, sim: KubeSim) -> None:
    rv = sim.store.resource_version
    created = await api.ok("POST", f"{CMS}?dryRun=All", cm("dry"))
    assert created["metadata"]["name"] == "dry"
    status, _ = await api.call("GET", f"{CMS}/dry")
    assert status == 404
    await api.ok("POST", CMS, cm("wet"))
    rv = sim.store.resource_version
    await api.ok("PUT", f"{CMS}/wet?dryRun=All", cm("wet", k="changed"))
    await api.ok("DELETE", f"{CMS}/wet?dryRun=All")
    assert (await api.ok("GET", f"{CMS}/wet"))["data"] == {"k": "v"}
    assert sim.store.resource_version == rv


async def test_client_quirks_no_content_type_and_yaml_bodies(api: Api) -> None:
    created = await api.ok("POST", CMS, cm("noct"), content_type=None)
    assert created["metadata"]["name"] == "noct"
    yaml_body = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fromyaml\ndata:\n  a: b\n"
    created = await api.ok("POST", CMS, raw=yaml_body, content_type="application/yaml")
    assert created["data"] == {"a": "b"}


@pytest.mark.parametrize(
    ("raw", "content_type", "code"),
    [
        (b"{not json", "application/json", 400),
        (b"[1, 2]", "application/json", 400),
        (b"key: [unclosed", "application/yaml", 400),
        (b'{"metadata": "str"}', "application/json", 400),
        (b'{"kind": "Secret", "metadata": {"name": "x"}}', "application/json", 400),
        (b"{}", "application/xml", 415),
        (b"", "application/json", 400),
    ],
)
async def test_bad_bodies(api: Api, raw: bytes, content_type: str, code: int) -> None:
    status, payload = await api.call("POST", CMS, raw=raw, content_type=content_type)
    assert status == code and payload["kind"] == "Status" and payload["code"] == code


async def test_oversized_body_is_413(kubesim_factory: KubeSimFactory) -> None:
    sim = await kubesim_factory(kubelet=False, max_body_bytes=1024)
    async with aiohttp.ClientSession() as session:
        api = Api(session, sim.url)
        status, payload = await api.call("POST", CMS, cm("big", k="x" * 4096))
        assert status == 413 and payload["reason"] == "RequestEntityTooLarge"
        assert payload["message"] == "Request entity too large: limit is 1024"
        await api.ok("POST", CMS, cm("small"))  # the server is still fine


@pytest.mark.parametrize(
    "path",
    [
        "/api/v2/pods",
        "/apis/nogroup/v1/things",
        "/apis/apps/v9/deployments",
        "/api/v1/widgets",
        "/api/v1/namespaces/default/nodes",
        "/apis/apps/v1/namespaces/default/deployments/d/bogus",
        "/api/v1/namespaces/default/configmaps/c/status",
        "/nonsense",
        "/apis/nogroup",
    ],
)
async def test_unknown_paths_are_404_status(api: Api, path: str) -> None:
    status, payload = await api.call("GET", path)
    assert status == 404
    assert status_of(payload, 404, "NotFound") == "the server could not find the requested resource"


async def test_method_not_allowed(api: Api) -> None:
    status, payload = await api.call("POST", f"{CMS}/named", cm("named"))
    assert status == 405 and status_of(payload, 405, "MethodNotAllowed")


async def test_unacceptable_accept_is_406(api: Api) -> None:
    status, _ = await api.call("GET", CMS, headers={"Accept": "application/vnd.kubernetes.protobuf"})
    assert status == 406
    status, _ = await api.call(
        "GET", CMS, headers={"Accept": "application/vnd.kubernetes.protobuf, application/json"}
    )
    assert status == 200


async def test_pod_create_sets_generation_phase_and_qos(api: Api) -> None:
    pod = {
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "i"}]},
        "status": {"phase": "Running"},
    }
    created = await api.ok("POST", PODS, pod)
    assert created["metadata"]["generation"] == 1
    assert created["status"]["phase"] == "Pending"
    assert created["status"]["qosClass"] == "BestEffort"


async def test_resource_version_set_on_create_is_rejected(api: Api) -> None:
    body = cm("rv")
    body["metadata"]["resourceVersion"] = "5"
    status, payload = await api.call("POST", CMS, body)
    assert status == 500 and "resourceVersion should not be set" in payload["message"]


async def test_events_are_one_store_with_two_views(api: Api) -> None:
    event = {
        "metadata": {"name": "e1"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
        "reason": "Started",
        "message": "hello",
        "type": "Normal",
        "count": 1,
    }
    await api.ok("POST", "/api/v1/namespaces/default/events", event)
    viewed = await api.ok("GET", "/apis/events.k8s.io/v1/namespaces/default/events/e1")
    assert viewed["apiVersion"] == "events.k8s.io/v1"
    assert viewed["regarding"]["name"] == "p" and viewed["note"] == "hello" and viewed["deprecatedCount"] == 1
    listed = await api.ok("GET", "/apis/events.k8s.io/v1/events?fieldSelector=regarding.name%3Dp")
    assert [i["metadata"]["name"] for i in listed["items"]] == ["e1"]
    core = await api.ok("GET", "/api/v1/events?fieldSelector=involvedObject.name=q")
    assert core["items"] == []


async def test_access_reviews_are_answered_and_not_stored(api: Api, sim: KubeSim) -> None:
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": "delete", "resource": "pods", "namespace": "default"}},
    }
    rv = sim.store.resource_version
    status, payload = await api.call("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", review)
    assert status == 201 and payload["status"]["allowed"] is True
    assert payload["spec"] == review["spec"]
    assert sim.store.resource_version == rv
    status, payload = await api.call("GET", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews")
    assert status == 405 and payload["reason"] == "MethodNotAllowed"


async def test_yaml_responses_when_asked(api: Api) -> None:
    await api.ok("POST", CMS, cm("y"))
    async with api.session.get(f"{api.url}{CMS}/y", headers={"Accept": "application/yaml"}) as resp:
        assert resp.status == 200 and resp.content_type == "application/yaml"
        text = await resp.text()
    assert "kind: ConfigMap" in text and "name: y" in text
    async with api.session.get(f"{api.url}{CMS}/nope", headers={"Accept": "application/yaml"}) as resp:
        assert resp.status == 404 and "reason: NotFound" in await resp.text()


async def test_large_bodies_are_read_whole(api: Api) -> None:
    value = "x" * 900_000  # arrives in many TCP segments (ConfigMaps are limited to 1 MiB)
    created = await api.ok("POST", CMS, cm("large", k=value))
    assert len(created["data"]["k"]) == len(value)
    chunked = orjson.dumps(cm("chunked", k=value[:300_000]))

    async def pieces() -> Any:
        for start in range(0, len(chunked), 65_000):
            yield chunked[start : start + 65_000]

    async with api.session.post(
        api.url + CMS, data=pieces(), headers={"Content-Type": "application/json"}
    ) as resp:
        assert resp.status == 201, await resp.text()
