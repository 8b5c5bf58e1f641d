"""Discovery (legacy and aggregated v2), /version, Table and metadata-only output, and the CRD lifecycle."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
import pytest

from kubesim import KubeSim
from kubesim.pytest_plugin import KubeSimFactory
from tests.helpers import wait_for

Obj = dict[str, Any]
AGGREGATED = (
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
)
AGGREGATED_CT = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
TABLE = (
    "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,"
    "application/json"
)
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
WIDGETS = "/apis/example.com/v1/namespaces/default/widgets"


class Api:
    def __init__(self, session: aiohttp.ClientSession, url: str) -> None:
        self.session = session
        self.url = url

    async def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
        accept: str = "application/json",
    ) -> tuple[int, Any, str]:
        data = None if body is None else orjson.dumps(body)
        headers = {"Content-Type": content_type, "Accept": accept}
        async with self.session.request(method, self.url + path, data=data, headers=headers) as resp:
            raw = await resp.read()
            return resp.status, orjson.loads(raw) if raw else None, resp.headers.get("Content-Type", "")

    async def ok(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
        accept: str = "application/json",
    ) -> Any:
        status, payload, _ = await self.call(method, path, body, content_type, accept)
        assert status < 300, (method, path, status, payload)
        return payload


@pytest.fixture
async def sim(kubesim_factory: KubeSimFactory) -> KubeSim:
    return await kubesim_factory(kubelet=False)


@pytest.fixture
async def api(sim: KubeSim) -> AsyncIterator[Api]:
    async with aiohttp.ClientSession() as session:
        yield Api(session, sim.url)


async def test_version(api: Api) -> None:
    version = await api.ok("GET", "/version")
    assert (version["major"], version["minor"]) == ("1", "32") and version["gitVersion"].startswith("v1.32")


async def test_legacy_discovery(api: Api) -> None:
    core = await api.ok("GET", "/api")
    assert core["kind"] == "APIVersions" and core["versions"] == ["v1"]
    groups = await api.ok("GET", "/apis")
    by_name = {g["name"]: g for g in groups["groups"]}
    for name in (
        "apps",
        "batch",
        "events.k8s.io",
        "coordination.k8s.io",
        "rbac.authorization.k8s.io",
        "apiextensions.k8s.io",
    ):
        assert by_name[name]["preferredVersion"] in by_name[name]["versions"]
    v1 = await api.ok("GET", "/api/v1")
    resources = {r["name"]: r for r in v1["resources"]}
    assert resources["pods"]["verbs"] == [
        "create",
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "update",
        "watch",
    ]
    assert resources["pods"]["shortNames"] == ["po"] and resources["pods"]["categories"] == ["all"]
    assert resources["pods/status"]["verbs"] == ["get", "patch", "update"]
    assert resources["nodes"]["namespaced"] is False
    apps = await api.ok("GET", "/apis/apps/v1")
    scale = {r["name"]: r for r in apps["resources"]}["deployments/scale"]
    assert (scale["group"], scale["version"], scale["kind"]) == ("autoscaling", "v1", "Scale")
    assert (await api.call("GET", "/apis/apps/v2"))[0] == 404


async def test_aggregated_discovery_only_when_asked(api: Api) -> None:
    status, payload, content_type = await api.call("GET", "/apis", accept=AGGREGATED)
    assert status == 200 and content_type == AGGREGATED_CT
    assert payload["kind"] == "APIGroupDiscoveryList" and payload["apiVersion"] == "apidiscovery.k8s.io/v2"
    apps = next(i for i in payload["items"] if i["metadata"]["name"] == "apps")
    deploy = next(r for r in apps["versions"][0]["resources"] if r["resource"] == "deployments")
    assert deploy["scope"] == "Namespaced" and deploy["responseKind"]["kind"] == "Deployment"
    assert {s["subresource"] for s in deploy["subresources"]} == {"status", "scale"}
    status, payload, content_type = await api.call("GET", "/api", accept=AGGREGATED)
    assert content_type == AGGREGATED_CT and payload["items"][0]["metadata"]["name"] == ""
    _, payload, content_type = await api.call("GET", "/apis")
    assert content_type.startswith("application/json") and payload["kind"] == "APIGroupList"


async def test_table_output(api: Api, sim: KubeSim) -> None:
    pod = {"metadata": {"name": "p1"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    await api.ok("POST", "/api/v1/namespaces/default/pods", pod)
    table = await api.ok("GET", "/api/v1/namespaces/default/pods?limit=500", accept=TABLE)
    assert table["kind"] == "Table" and table["apiVersion"] == "meta.k8s.io/v1"
    columns = [c["name"] for c in table["columnDefinitions"]]
    assert columns[:5] == ["Name", "Ready", "Status", "Restarts", "Age"]
    row = table["rows"][0]
    assert row["cells"][:3] == ["p1", "0/1", "Pending"]
    assert row["object"]["kind"] == "PartialObjectMetadata" and row["object"]["metadata"]["name"] == "p1"
    roles = await api.ok("GET", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles", accept=TABLE)
    assert [c["name"] for c in roles["columnDefinitions"]] == [
        "Name",
        "Created At",
    ]  # no printer: the default
    await api.ok(
        "POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "c"}, "data": {"a": "b"}}
    )
    cms = await api.ok("GET", "/api/v1/namespaces/default/configmaps", accept=TABLE)
    assert [c["name"] for c in cms["columnDefinitions"]] == ["Name", "Data", "Age"]
    assert cms["rows"][0]["cells"][:2] == ["c", 1]
    event = {
        "metadata": {"name": "e"},
        "involvedObject": {"kind": "Pod", "name": "p1", "namespace": "default"},
        "reason": "Started",
        "message": "hello",
        "type": "Normal",
    }
    await api.ok("POST", "/api/v1/namespaces/default/events", event)
    events = await api.ok("GET", "/api/v1/namespaces/default/events", accept=TABLE)
    assert [c["name"] for c in events["columnDefinitions"]][:5] == [
        "Last Seen",
        "Type",
        "Reason",
        "Object",
        "Message",
    ]
    assert events["rows"][0]["cells"][1:5] == ["Normal", "Started", "pod/p1", "hello"]
    one = await api.ok("GET", "/api/v1/namespaces/default", accept=TABLE)
    assert one["rows"][0]["cells"][:2] == ["default", "Active"]


async def test_partial_object_metadata(api: Api) -> None:
    accept = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"
    listed = await api.ok("GET", "/api/v1/namespaces", accept=accept)
    assert listed["kind"] == "PartialObjectMetadataList"
    assert {i["kind"] for i in listed["items"]} == {"PartialObjectMetadata"}
    assert "spec" not in listed["items"][0]


def widget_crd(scale: bool = True) -> Obj:
    subresources: Obj = {"status": {}}
    if scale:
        subresources["scale"] = {
            "specReplicasPath": ".spec.replicas",
            "statusReplicasPath": ".status.replicas",
        }
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {"size": {"type": "integer"}, "replicas": {"type": "integer"}},
            },
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": subresources,
                    "schema": {"openAPIV3Schema": schema},
                    "additionalPrinterColumns": [
                        {"name": "Size", "type": "integer", "jsonPath": ".spec.size"}
                    ],
                }
            ],
        },
    }


async def test_crd_lifecycle(api: Api) -> None:
    assert (await api.call("GET", WIDGETS))[0] == 404  # not served before the CRD exists
    await api.ok("POST", CRDS, widget_crd())
    crd = await api.ok("GET", f"{CRDS}/widgets.example.com")
    conditions = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
    assert conditions == {"NamesAccepted": "True", "Established": "True"}
    assert crd["status"]["acceptedNames"]["kind"] == "Widget" and crd["status"]["storedVersions"] == ["v1"]
    resources = {r["name"]: r for r in (await api.ok("GET", "/apis/example.com/v1"))["resources"]}
    assert resources["widgets"]["shortNames"] == ["wd"] and "widgets/scale" in resources

    widget = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": {"size": 1, "replicas": 2, "unknown": True},
        "status": {"replicas": 9},
    }
    created = await api.ok("POST", WIDGETS, widget)
    assert created["metadata"]["generation"] == 1 and "status" not in created
    assert created["spec"] == {"size": 1, "replicas": 2}  # pruned: not in the schema
    status, payload, _ = await api.call(
        "PUT", f"{WIDGETS}/w", dict(created, spec={"size": 2}) | {"metadata": {"name": "w"}}
    )
    assert status == 422 and "must be specified for an update" in payload["message"]
    changed = await api.ok("PATCH", f"{WIDGETS}/w", {"spec": {"size": 3}}, "application/merge-patch+json")
    assert changed["metadata"]["generation"] == 2
    labelled = await api.ok(
        "PATCH", f"{WIDGETS}/w", {"metadata": {"labels": {"a": "b"}}}, "application/merge-patch+json"
    )
    assert labelled["metadata"]["generation"] == 2
    status, _, _ = await api.call(
        "PATCH", f"{WIDGETS}/w", {"spec": {}}, "application/strategic-merge-patch+json"
    )
    assert status == 415  # no strategic merge patch for custom resources
    with_status = await api.ok(
        "PATCH", f"{WIDGETS}/w/status", {"status": {"replicas": 2}}, "application/merge-patch+json"
    )
    assert with_status["status"]["replicas"] == 2 and with_status["metadata"]["generation"] == 2
    scale = await api.ok("GET", f"{WIDGETS}/w/scale")
    assert scale["spec"]["replicas"] == 2 and scale["status"]["replicas"] == 2
    await api.ok("PATCH", f"{WIDGETS}/w/scale", {"spec": {"replicas": 4}}, "application/merge-patch+json")
    assert (await api.ok("GET", f"{WIDGETS}/w"))["spec"]["replicas"] == 4
    table = await api.ok("GET", WIDGETS, accept=TABLE)
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Size"]
    assert table["rows"][0]["cells"] == ["w", 3]
    status, payload, _ = await api.call("GET", f"{WIDGETS}?fieldSelector=spec.size%3D3")
    assert status == 400 and payload["message"].startswith('"spec.size" is not a known field selector')

    # deletion: the CRD waits for its custom resources (one of them held by a finalizer)
    await api.ok(
        "PATCH",
        f"{WIDGETS}/w",
        {"metadata": {"finalizers": ["example.com/hold"]}},
        "application/merge-patch+json",
    )
    deleting = await api.ok("DELETE", f"{CRDS}/widgets.example.com")
    assert "customresourcecleanup.apiextensions.k8s.io" in deleting["metadata"]["finalizers"]

    async def widget_terminating() -> bool:
        _, body, _ = await api.call("GET", f"{WIDGETS}/w")
        return bool(body.get("metadata", {}).get("deletionTimestamp"))

    await wait_for(widget_terminating, message="custom resource being deleted")
    assert (await api.call("GET", f"{CRDS}/widgets.example.com"))[0] == 200
    await api.ok("PATCH", f"{WIDGETS}/w", {"metadata": {"finalizers": None}}, "application/merge-patch+json")

    async def crd_gone() -> bool:
        return (await api.call("GET", f"{CRDS}/widgets.example.com"))[0] == 404

    await wait_for(crd_gone, message="CRD removed")
    assert (await api.call("GET", WIDGETS))[0] == 404
    assert (await api.call("GET", "/apis/example.com/v1"))[0] == 404


async def test_cluster_scoped_crd_without_scale(api: Api) -> None:
    crd = widget_crd(scale=False)
    crd["metadata"]["name"] = "gadgets.example.com"
    crd["spec"]["scope"] = "Cluster"
    crd["spec"]["names"] = {"plural": "gadgets", "kind": "Gadget"}
    await api.ok("POST", CRDS, crd)
    created = await api.ok("POST", "/apis/example.com/v1/gadgets", {"metadata": {"name": "g"}, "spec": {}})
    assert "namespace" not in created["metadata"]
    assert (await api.call("GET", "/apis/example.com/v1/gadgets/g/scale"))[0] == 404
    assert (await api.call("GET", "/apis/example.com/v1/namespaces/default/gadgets"))[0] == 404


async def test_crd_with_two_served_versions_converts_api_version(api: Api) -> None:
    crd = widget_crd(scale=False)
    v1 = crd["spec"]["versions"][0]
    crd["spec"]["versions"] = [v1, dict(v1, name="v2", storage=False)]
    await api.ok("POST", CRDS, crd)
    await api.ok(
        "POST", WIDGETS, {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    )
    v2_path = "/apis/example.com/v2/namespaces/default/widgets"
    assert (await api.ok("GET", f"{v2_path}/w"))["apiVersion"] == "example.com/v2"
    assert (await api.ok("GET", f"{WIDGETS}/w"))["apiVersion"] == "example.com/v1"
    listed = await api.ok("GET", v2_path)
    assert listed["apiVersion"] == "example.com/v2" and listed["items"][0]["apiVersion"] == "example.com/v2"
    async with api.session.get(f"{api.url}{v2_path}?watch=true&timeoutSeconds=1") as resp:
        event = orjson.loads((await resp.read()).splitlines()[0])
    assert event["object"]["apiVersion"] == "example.com/v2"
    groups = await api.ok("GET", "/apis")
    example = next(g for g in groups["groups"] if g["name"] == "example.com")
    assert [v["version"] for v in example["versions"]] == ["v2", "v1"]  # kube-aware version priority
    assert example["preferredVersion"]["version"] == "v2"


async def test_table_include_object(api: Api) -> None:
    await api.ok(
        "POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "c"}, "data": {"a": "b"}}
    )
    path = "/api/v1/namespaces/default/configmaps"
    full = await api.ok("GET", f"{path}?includeObject=Object", accept=TABLE)
    assert full["rows"][0]["object"]["data"] == {"a": "b"}
    bare = await api.ok("GET", f"{path}?includeObject=None", accept=TABLE)
    assert bare["rows"][0]["object"] is None
    status, payload, _ = await api.call("GET", f"{path}?includeObject=Everything", accept=TABLE)
    assert status == 400 and payload["reason"] == "BadRequest"
