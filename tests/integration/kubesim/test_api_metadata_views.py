"""Metadata-only requests over real HTTP, as the garbage collector's metadata client makes them:
`Accept: application/json;as=PartialObjectMetadata[List];g=meta.k8s.io;v=v1` on GET, LIST, WATCH, and on
the answers of POST, PATCH, DELETE and DELETECOLLECTION, for built-in and custom resources; a list kind
asked of one object (or the reverse) is 406 as upstream."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from kubesim import KubeSim
from kubesim.pytest_plugin import KubeSimFactory
from tests.helpers import schemaless_crd
from tests.kubesim_api import Api

Obj = dict[str, Any]
CMS = "/api/v1/namespaces/default/configmaps"
PODS = "/api/v1/namespaces/default/pods"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
GIZMOS = "/apis/example.com/v1/namespaces/default/gizmos"
ONE = {"Accept": "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"}
LIST = {"Accept": "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"}
MERGE = "application/merge-patch+json"


@pytest.fixture
async def sim(kubesim_factory: KubeSimFactory) -> KubeSim:
    return await kubesim_factory(kubelet=False)


def gizmo_crd() -> Obj:
    return schemaless_crd("example.com", "Gizmo")


def gizmo(name: str, finalizers: list[str] | None = None) -> Obj:
    meta: Obj = {"name": name, "labels": {"app": "g"}, "finalizers": finalizers or []}
    return {"apiVersion": "example.com/v1", "kind": "Gizmo", "metadata": meta, "spec": {"size": 3}}


def configmap(name: str, finalizers: list[str] | None = None) -> Obj:
    meta: Obj = {"name": name, "labels": {"app": "c"}, "finalizers": finalizers or []}
    return {"metadata": meta, "data": {"secret": "s"}}


def assert_partial(obj: Obj, name: str) -> None:
    assert obj["kind"] == "PartialObjectMetadata" and obj["apiVersion"] == "meta.k8s.io/v1", obj
    assert set(obj) == {"kind", "apiVersion", "metadata"} and obj["metadata"]["name"] == name


@pytest.mark.parametrize(("path", "make"), [(CMS, configmap), (GIZMOS, gizmo)])
async def test_get_and_list_answer_metadata_only(api: Api, path: str, make: Any) -> None:
    await api.ok("POST", CRDS, gizmo_crd())
    for name in ("a", "b"):
        await api.ok("POST", path, make(name))
    one = await api.ok("GET", f"{path}/a", headers=ONE)
    assert_partial(one, "a")
    assert one["metadata"]["labels"] == {"app": one["metadata"]["labels"]["app"]} and one["metadata"]["uid"]
    page = await api.ok("GET", f"{path}?limit=1", headers=LIST)
    assert page["kind"] == "PartialObjectMetadataList" and page["apiVersion"] == "meta.k8s.io/v1"
    assert page["metadata"]["continue"] and page["metadata"]["remainingItemCount"] == 1
    assert_partial(page["items"][0], "a")
    rest = await api.ok("GET", f"{path}?limit=1&continue={page['metadata']['continue']}", headers=LIST)
    assert [i["metadata"]["name"] for i in rest["items"]] == ["b"]


@pytest.mark.parametrize(
    ("path", "make", "go_type"), [(CMS, configmap, "core.ConfigMap"), (GIZMOS, gizmo, "")]
)
async def test_a_list_kind_for_one_object_is_not_acceptable(
    api: Api, path: str, make: Any, go_type: str
) -> None:
    await api.ok("POST", CRDS, gizmo_crd())
    await api.ok("POST", path, make("a"))
    status, payload = await api.call("GET", f"{path}/a", headers=LIST)
    single = f"*{go_type}" if go_type else "*unstructured.Unstructured"
    assert status == 406 and payload["reason"] == "NotAcceptable"
    assert payload["message"] == (
        f"you requested PartialObjectMetadataList, but the requested object is not a list ({single})"
    )
    status, payload = await api.call("GET", path, headers=ONE)
    listed = f"*{go_type}List" if go_type else "*unstructured.UnstructuredList"
    assert status == 406 and payload["message"] == (
        f"you requested PartialObjectMetadata, but the requested object is a list ({listed})"
    )


@pytest.mark.parametrize(("path", "make"), [(CMS, configmap), (GIZMOS, gizmo)])
async def test_write_answers_are_metadata_only_when_asked(api: Api, path: str, make: Any) -> None:
    await api.ok("POST", CRDS, gizmo_crd())
    created = await api.ok("POST", path, make("w", ["example.com/hold"]), headers=ONE)
    assert_partial(created, "w")
    patched = await api.ok("PATCH", f"{path}/w", {"metadata": {"labels": {"x": "y"}}}, MERGE, headers=ONE)
    assert_partial(patched, "w")
    assert patched["metadata"]["labels"]["x"] == "y"
    full = await api.ok("GET", f"{path}/w")
    assert full["metadata"]["labels"]["x"] == "y" and ("spec" in full or "data" in full)  # the write happened
    deleting = await api.ok("DELETE", f"{path}/w?propagationPolicy=Foreground", headers=ONE)
    assert_partial(deleting, "w")
    assert deleting["metadata"]["finalizers"] == ["example.com/hold", "foregroundDeletion"]
    released = await api.ok("PATCH", f"{path}/w", {"metadata": {"finalizers": None}}, MERGE, headers=ONE)
    assert_partial(released, "w")  # the last state, as the object is removed
    await api.ok("POST", path, make("gone"))
    status = await api.ok("DELETE", f"{path}/gone", headers=ONE)
    assert status["kind"] == "Status" and status["status"] == "Success"  # a Status is never transformed


async def test_pod_delete_and_delete_collection_answers(api: Api) -> None:
    for name in ("p1", "p2"):
        await api.ok(
            "POST", PODS, {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
        )
    deleted = await api.ok("DELETE", f"{PODS}/p1", headers=ONE)  # pods answer with the object
    assert_partial(deleted, "p1")
    for name in ("a", "b"):
        await api.ok("POST", CMS, configmap(name))
    result = await api.ok("DELETE", f"{CMS}?labelSelector=app%3Dc", headers=LIST)
    assert result["kind"] == "PartialObjectMetadataList"
    assert [i["metadata"]["name"] for i in result["items"]] == ["a", "b"]
    status, payload = await api.call("DELETE", PODS, headers=ONE)
    assert status == 406 and "but the requested object is a list (*core.PodList)" in payload["message"]


async def test_an_accept_nothing_satisfies_is_406_before_the_write(api: Api) -> None:
    protobuf_only = {"Accept": "application/vnd.kubernetes.protobuf"}
    status, payload = await api.call("POST", CMS, configmap("never"), headers=protobuf_only)
    assert status == 406 and payload["reason"] == "NotAcceptable"
    assert await api.gone(f"{CMS}/never")


async def test_custom_resource_metadata_watch(api: Api, sim: KubeSim) -> None:
    await api.ok("POST", CRDS, gizmo_crd())
    rv = sim.store.resource_version
    url = f"{sim.url}{GIZMOS}?watch=true&resourceVersion={rv}&timeoutSeconds=10"
    async with api.session.get(url, headers=ONE) as watch:
        await api.ok("POST", GIZMOS, gizmo("w"))
        async with asyncio.timeout(5):
            event = orjson.loads(await watch.content.readline())
    assert event["type"] == "ADDED"
    assert_partial(event["object"], "w")
