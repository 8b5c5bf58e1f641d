"""apiserver behaviours over raw HTTP: generateName retries, managedFields of subresource writes, waiting
for a resourceVersion not reached yet, the inconsistent-continue answer for an expired continue token, and
empty metadata collections left out as Go's omitempty does."""

from __future__ import annotations

import asyncio
import random
from typing import TYPE_CHECKING, Any

import aiohttp
import orjson
import pytest

from kubesim import KubeSim
from kubesim.pytest_plugin import KubeSimFactory
from tests.helpers import wait_for
from tests.kubesim_api import Api

if TYPE_CHECKING:
    from _typeshed import SupportsLenAndGetItem

Obj = dict[str, Any]
CMS = "/api/v1/namespaces/default/configmaps"
DEPLOYS = "/apis/apps/v1/namespaces/default/deployments"
REPLICASETS = "/apis/apps/v1/namespaces/default/replicasets"
CRONJOBS = "/apis/batch/v1/namespaces/default/cronjobs"
EVENTS = "/api/v1/namespaces/default/events"
MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"


@pytest.fixture
async def sim(kubesim_factory: KubeSimFactory) -> KubeSim:
    return await kubesim_factory(kubelet=False, seed=1)


class ScriptedRandom(random.Random):
    """Picks the characters of `script` in order: generated names that collide on purpose."""

    def __init__(self, script: str) -> None:
        super().__init__(0)
        self.script = list(script)

    def choice(self, seq: SupportsLenAndGetItem[Any]) -> Any:
        return self.script.pop(0)


def configmap(name: str = "", generate_name: str = "") -> Obj:
    meta = {"name": name} if name else {"generateName": generate_name}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": "v"}}


async def test_generated_name_collision_is_retried_with_a_new_name(api: Api, sim: KubeSim) -> None:
    await api.ok("POST", CMS, configmap("gen-bbbbb"))
    await api.ok("POST", CMS, configmap("gen-ccccc"))
    sim.api.rng = ScriptedRandom("bbbbb" + "ccccc" + "ddddd")
    created = await api.ok("POST", CMS, configmap(generate_name="gen-"))
    assert created["metadata"]["name"] == "gen-ddddd"
    assert created["metadata"]["generateName"] == "gen-"


async def test_generated_name_gives_up_after_eight_collisions(api: Api, sim: KubeSim) -> None:
    await api.ok("POST", CMS, configmap("gen-bbbbb"))
    sim.api.rng = ScriptedRandom("bbbbb" * 8 + "ccccc")
    status, payload = await api.call("POST", CMS, configmap(generate_name="gen-"))
    assert status == 409 and payload["reason"] == "AlreadyExists", payload
    assert payload["message"] == 'configmaps "gen-bbbbb" already exists'


async def test_long_generate_name_prefix_is_cut_to_fit_a_label(api: Api) -> None:
    created = await api.ok("POST", CMS, configmap(generate_name="x" * 70))
    assert len(created["metadata"]["name"]) == 63 and created["metadata"]["name"].startswith("x" * 58)


def deployment(replicas: int) -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "d"}},
            "template": {
                "metadata": {"labels": {"app": "d"}},
                "spec": {"containers": [{"name": "c", "image": "i"}]},
            },
        },
    }


async def test_scale_writes_are_owned_with_subresource_scale_and_conflict_with_apply(api: Api) -> None:
    await api.ok("PATCH", f"{DEPLOYS}/d?fieldManager=applier", deployment(1), APPLY)
    await api.ok("PATCH", f"{DEPLOYS}/d/scale?fieldManager=kubectl", {"spec": {"replicas": 3}}, MERGE)
    live = await api.ok("GET", f"{DEPLOYS}/d")
    scale_entries = [e for e in live["metadata"]["managedFields"] if e["manager"] == "kubectl"]
    assert scale_entries == [
        {
            "manager": "kubectl",
            "operation": "Update",
            "apiVersion": "apps/v1",
            "time": scale_entries[0]["time"],
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {"f:replicas": {}}},
            "subresource": "scale",
        }
    ]
    status, payload = await api.call("PATCH", f"{DEPLOYS}/d?fieldManager=applier", deployment(1), APPLY)
    assert status == 409 and payload["reason"] == "Conflict", payload
    assert payload["message"] == (
        'Apply failed with 1 conflict: conflict with "kubectl" with subresource "scale" using apps/v1: '
        ".spec.replicas"
    )
    assert payload["details"]["causes"] == [
        {
            "reason": "FieldManagerConflict",
            "message": 'conflict with "kubectl" with subresource "scale" using apps/v1',
            "field": ".spec.replicas",
        }
    ]


async def test_status_writes_are_owned_with_subresource_status(api: Api) -> None:
    created = await api.ok("POST", f"{DEPLOYS}?fieldManager=creator", deployment(1))
    created["status"] = {"replicas": 1, "observedGeneration": 1}
    await api.ok("PUT", f"{DEPLOYS}/d/status?fieldManager=controller", created)
    live = await api.ok("GET", f"{DEPLOYS}/d")
    entries = {e["manager"]: e for e in live["metadata"]["managedFields"]}
    assert entries["controller"]["subresource"] == "status"
    assert entries["controller"]["fieldsV1"] == {"f:status": {"f:observedGeneration": {}, "f:replicas": {}}}
    assert "subresource" not in entries["creator"]


async def test_get_and_list_wait_for_a_resource_version_not_reached_yet(api: Api, sim: KubeSim) -> None:
    sim.api.too_new_wait = 30.0
    created = await api.ok("POST", CMS, configmap("a"))
    wanted = int(created["metadata"]["resourceVersion"]) + 1
    pending = [
        asyncio.create_task(api.call("GET", f"{CMS}/a?resourceVersion={wanted}")),
        asyncio.create_task(api.call("GET", f"{CMS}?resourceVersion={wanted}")),
    ]
    await wait_for(lambda: sim.store.revision_waiters == 2, message="both requests waiting")
    assert not any(task.done() for task in pending)
    await api.ok("POST", CMS, configmap("b"))
    (get_status, got), (list_status, listed) = await asyncio.gather(*pending)
    assert get_status == 200 and got["metadata"]["name"] == "a"
    assert list_status == 200 and int(listed["metadata"]["resourceVersion"]) >= wanted
    assert [i["metadata"]["name"] for i in listed["items"]] == ["a", "b"]


async def test_a_resource_version_that_never_arrives_is_504(api: Api, sim: KubeSim) -> None:
    sim.api.too_new_wait = 0.2
    current = sim.store.resource_version
    for path in (f"{CMS}?resourceVersion={current + 5}", f"{CMS}/x?resourceVersion={current + 5}"):
        status, payload = await api.call("GET", path)
        assert status == 504 and payload["reason"] == "Timeout", payload
        assert payload["message"] == f"Too large resource version: {current + 5}, current: {current}"
        assert payload["details"]["causes"] == [
            {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
        ]
        assert payload["details"]["retryAfterSeconds"] == 1
    assert sim.store.revision_waiters == 0


async def test_watch_from_a_future_resource_version_starts_after_it(api: Api, sim: KubeSim) -> None:
    start = sim.store.resource_version + 2
    async with api.session.get(f"{api.url}{CMS}?watch=true&resourceVersion={start}") as resp:
        assert resp.status == 200
        for name in ("one", "two", "three"):
            await api.ok("POST", CMS, configmap(name))
        event = orjson.loads(await asyncio.wait_for(resp.content.readline(), 10))
    assert event["type"] == "ADDED" and event["object"]["metadata"]["name"] == "three"


WATCH_LIST = "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"


async def test_streaming_list_from_a_future_resource_version_fails_in_stream(api: Api, sim: KubeSim) -> None:
    # upstream: waitUntilWatchCacheFreshAndForceAllEvents, then newErrWatcher (a 200 and one ERROR event)
    sim.api.too_new_wait = 0.2
    current = sim.store.resource_version
    async with api.session.get(f"{api.url}{CMS}?{WATCH_LIST}&resourceVersion={current + 5}") as resp:
        assert resp.status == 200
        event = orjson.loads(await asyncio.wait_for(resp.content.readline(), 10))
        assert await asyncio.wait_for(resp.content.read(), 10) == b""
    assert event["type"] == "ERROR"
    status = event["object"]
    assert status["code"] == 504 and status["reason"] == "Timeout"
    assert status["message"] == f"Too large resource version: {current + 5}, current: {current}"
    assert status["details"]["causes"] == [
        {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
    ]
    assert status["details"]["retryAfterSeconds"] == 1
    assert sim.store.revision_waiters == 0


async def test_streaming_list_waits_for_a_resource_version_that_arrives(api: Api, sim: KubeSim) -> None:
    sim.api.too_new_wait = 30.0
    wanted = sim.store.resource_version + 1

    async def first_event() -> Any:
        async with api.session.get(f"{api.url}{CMS}?{WATCH_LIST}&resourceVersion={wanted}") as resp:
            assert resp.status == 200
            return orjson.loads(await asyncio.wait_for(resp.content.readline(), 10))

    pending = asyncio.create_task(first_event())
    await wait_for(lambda: sim.store.revision_waiters == 1, message="the watch waits")
    await api.ok("POST", CMS, configmap("a"))
    event = await pending
    assert event["type"] == "ADDED" and event["object"]["metadata"]["name"] == "a"


async def test_expired_continue_token_answers_inconsistent_continue(api: Api, sim: KubeSim) -> None:
    for name in ("a", "b", "c"):
        await api.ok("POST", CMS, configmap(name))
    page = await api.ok("GET", f"{CMS}?limit=1")
    await api.ok("DELETE", f"{CMS}/b")
    await api.ok("POST", CMS, configmap("d"))
    sim.store.compact()
    status, payload = await api.call("GET", f"{CMS}?limit=1&continue={page['metadata']['continue']}")
    assert status == 410 and payload["reason"] == "Expired" and payload["code"] == 410, payload
    assert payload["message"] == (
        "The provided continue parameter is too old to display a consistent list result. You can start a new "
        "list without the continue parameter, or use the continue token in this response to retrieve the "
        "remainder of the results. Continuing with the provided token results in an inconsistent list - "
        "objects that were created, modified, or deleted between the time the first chunk was returned and "
        "now may show up in the list."
    )
    token = payload["metadata"]["continue"]
    rest = await api.ok("GET", f"{CMS}?limit=10&continue={token}")  # the remainder as of now
    assert [i["metadata"]["name"] for i in rest["items"]] == ["c", "d"]
    assert rest["metadata"]["resourceVersion"] == str(sim.store.resource_version)


def pod_with_unknown_field(name: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "i", "colour": "red"}], "foo": 1},
    }


async def test_field_validation_modes_also_for_a_spec_seen_before(api: Api) -> None:
    pods = "/api/v1/namespaces/default/pods"
    for attempt in range(2):  # the second round meets the remembered (memoised) spec
        status, payload = await api.call(
            "POST", f"{pods}?fieldValidation=Strict", pod_with_unknown_field("s")
        )
        assert status == 400 and payload["reason"] == "BadRequest", payload
        assert payload["message"] == (
            'Pod in version "v1" cannot be handled as a Pod: strict decoding error: '
            'unknown field "spec.containers[0].colour", unknown field "spec.foo"'
        )
        for mode, warned in (("", True), ("?fieldValidation=Warn", True), ("?fieldValidation=Ignore", False)):
            name = f"p{attempt}-{mode.rpartition('=')[2].lower() or 'default'}"
            async with api.session.post(
                f"{api.url}{pods}{mode}",
                data=orjson.dumps(pod_with_unknown_field(name)),
                headers={"Content-Type": "application/json"},
            ) as resp:
                assert resp.status == 201, await resp.text()
                warnings = resp.headers.getall("Warning", [])
                created = orjson.loads(await resp.read())
            expected = [
                '299 - "unknown field \\"spec.containers[0].colour\\""',
                '299 - "unknown field \\"spec.foo\\""',
            ]
            assert warnings == (expected if warned else [])
            assert "foo" not in created["spec"] and "colour" not in created["spec"]["containers"][0]


def gadget_crd() -> Obj:
    schema = {
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {"color": {"type": "string"}}}},
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                    "selectableFields": [{"jsonPath": ".spec.color"}],
                }
            ],
        },
    }


async def test_crd_selectable_fields_filter_lists(api: Api) -> None:
    await api.ok("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", gadget_crd())
    gadgets = "/apis/example.com/v1/namespaces/default/gadgets"
    for name, color in (("g1", "red"), ("g2", "blue")):
        gadget = {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": name}}
        await api.ok("POST", gadgets, gadget | {"spec": {"color": color}})
    red = await api.ok("GET", f"{gadgets}?fieldSelector=spec.color%3Dred")
    assert [i["metadata"]["name"] for i in red["items"]] == ["g1"]
    not_red = await api.ok("GET", f"{gadgets}?fieldSelector=spec.color!%3Dred,metadata.name%3Dg2")
    assert [i["metadata"]["name"] for i in not_red["items"]] == ["g2"]
    status, payload = await api.call("GET", f"{gadgets}?fieldSelector=spec.size%3D1")
    assert status == 400 and payload["reason"] == "BadRequest", payload
    assert '"spec.size" is not a known field selector' in payload["message"]


async def test_create_owns_defaulted_fields_but_not_what_admission_adds(api: Api) -> None:
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "nginx", "labels": {"run": "nginx"}},
        "spec": {"containers": [{"name": "nginx", "image": "nginx"}]},
    }
    for name in ("nginx", "nginx-again"):  # the second pod's spec defaults come from the memo
        pod["metadata"]["name"] = name
        created = await api.ok("POST", "/api/v1/namespaces/default/pods?fieldManager=kubectl-run", pod)
        assert created["spec"]["serviceAccountName"] == "default" and len(created["spec"]["tolerations"]) == 2
        [entry] = created["metadata"]["managedFields"]
        assert entry["manager"] == "kubectl-run" and entry["operation"] == "Update"
        assert entry["fieldsV1"] == {  # what a real cluster records for `kubectl run nginx --image=nginx`
            "f:metadata": {"f:labels": {".": {}, "f:run": {}}},
            "f:spec": {
                "f:containers": {
                    'k:{"name":"nginx"}': {
                        ".": {},
                        "f:image": {},
                        "f:imagePullPolicy": {},
                        "f:name": {},
                        "f:resources": {},
                        "f:terminationMessagePath": {},
                        "f:terminationMessagePolicy": {},
                    }
                },
                "f:dnsPolicy": {},
                "f:enableServiceLinks": {},
                "f:restartPolicy": {},
                "f:schedulerName": {},
                "f:securityContext": {},
                "f:terminationGracePeriodSeconds": {},
            },
        }


async def test_managed_fields_times_follow_the_simulator_clock(kubesim_factory: KubeSimFactory) -> None:
    sim = await kubesim_factory(kubelet=False, clock=lambda: 1_000_000_000.0)
    async with aiohttp.ClientSession() as session:
        api = Api(session, sim.url)
        created = await api.ok("POST", CMS, configmap("a"))
        applied = await api.ok("PATCH", f"{CMS}/b?fieldManager=applier", configmap("b"), APPLY)
        updated = await api.ok("PATCH", f"{CMS}/a?fieldManager=patcher", {"data": {"x": "y"}}, MERGE)
    for obj in (created, applied, updated):
        assert obj["metadata"]["creationTimestamp"] == "2001-09-09T01:46:40Z"
        assert {e["time"] for e in obj["metadata"]["managedFields"]} == {"2001-09-09T01:46:40Z"}


async def test_empty_metadata_collections_never_read_back(api: Api) -> None:
    """Go serialises ObjectMeta's finalizers, labels, annotations and ownerReferences with omitempty: a
    write that leaves one empty (the last finalizer patched away, `labels: {}`) reads back without it."""
    body = configmap("omit")
    body["metadata"].update(labels={}, annotations={}, ownerReferences=[], finalizers=["example.com/keep"])
    created = await api.ok("POST", CMS, body)
    assert set(created["metadata"]) >= {"finalizers"}
    assert not {"labels", "annotations", "ownerReferences"} & set(created["metadata"])
    patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": ["example.com/keep"]}}
    patched = await api.ok("PATCH", f"{CMS}/omit", patch, content_type=STRATEGIC)
    assert "finalizers" not in patched["metadata"]
    fetched = await api.ok("GET", f"{CMS}/omit")
    assert "finalizers" not in fetched["metadata"] and fetched["data"] == {"k": "v"}


async def test_generation_compares_the_defaulted_spec(api: Api) -> None:
    """A PUT that re-sends the spec as first written (without the server's defaults) changes nothing, so
    metadata.generation stays; a real spec change bumps it."""
    template = {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    spec = {"replicas": 0, "selector": {"matchLabels": {"a": "b"}}, "template": template}
    rs: Obj = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "gen"}, "spec": spec}
    created = await api.ok("POST", REPLICASETS, rs)
    assert created["metadata"]["generation"] == 1
    assert created["spec"]["template"]["spec"]["restartPolicy"] == "Always"  # defaulted by the server
    assert created["spec"]["template"]["metadata"]["creationTimestamp"] is None  # as v1.32 prints it
    rs["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"]
    same = await api.ok("PUT", f"{REPLICASETS}/gen", rs)
    assert same["metadata"]["generation"] == 1
    rs["metadata"]["resourceVersion"] = same["metadata"]["resourceVersion"]
    rs["spec"]["replicas"] = 2
    changed = await api.ok("PUT", f"{REPLICASETS}/gen", rs)
    assert changed["metadata"]["generation"] == 2


async def test_zero_structs_read_back_as_go_prints_them(api: Api) -> None:
    """Go serialises a zero metav1.Time as null and never omits struct fields: templates read back with
    `creationTimestamp: null`, a core/v1 Event with null times, "" reporting strings and an empty source."""
    pod_spec = {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}
    cronjob: Obj = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "cj"},
        "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": {"spec": pod_spec}}}},
    }
    created = await api.ok("POST", CRONJOBS, cronjob)
    job_template = created["spec"]["jobTemplate"]
    assert job_template["metadata"] == {"creationTimestamp": None}
    assert job_template["spec"]["template"]["metadata"] == {"creationTimestamp": None}
    event: Obj = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "e1"},
        "involvedObject": {"kind": "ConfigMap", "name": "x", "namespace": "default"},
        "reason": "Tested",
        "message": "m",
        "type": "Normal",
    }
    stored = await api.ok("POST", EVENTS, event)
    assert (stored["eventTime"], stored["firstTimestamp"], stored["lastTimestamp"]) == (None, None, None)
    assert (stored["reportingComponent"], stored["reportingInstance"], stored["source"]) == ("", "", {})
