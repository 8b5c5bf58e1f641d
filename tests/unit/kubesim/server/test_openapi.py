"""kubesim.server.openapi: the documents kubectl reads, served over real HTTP by an aiohttp test server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from kubesim.schema import schemas
from kubesim.server import openapi


@dataclass(frozen=True)
class _Type:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True
    status: bool = False


class _Registry:
    def __init__(self) -> None:
        self.types = [
            _Type("", "v1", "pods", "Pod", status=True),
            _Type("", "v1", "namespaces", "Namespace", False),
            _Type("batch", "v1", "jobs", "Job", status=True),
        ]
        self.generation = 1

    def __iter__(self) -> Iterator[Any]:
        return iter(list(self.types))


@pytest.fixture
async def served() -> AsyncIterator[tuple[TestClient[web.Request, web.Application], _Registry]]:
    registry = _Registry()
    app = web.Application()
    openapi.add_routes(app, registry)
    async with TestClient(TestServer(app)) as client:
        yield client, registry


async def test_v3_root_points_at_group_version_documents(served: Any) -> None:
    client, _ = served
    response = await client.get("/openapi/v3")
    assert response.status == 200
    assert response.content_type == "application/json"
    paths = (await response.json())["paths"]
    assert set(paths) == {"api/v1", "apis/batch/v1"}
    url = paths["apis/batch/v1"]["serverRelativeURL"]
    assert url.startswith("/openapi/v3/apis/batch/v1?hash=")
    document = await (await client.get(url)).json()
    assert document["openapi"].startswith("3.")
    patch = document["paths"]["/apis/batch/v1/namespaces/{namespace}/jobs/{name}"]["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {"group": "batch", "version": "v1", "kind": "Job"}
    assert {"name": "fieldValidation", "in": "query"}.items() <= next(
        p for p in patch["parameters"] if p["name"] == "fieldValidation"
    ).items()
    assert "/apis/batch/v1/namespaces/{namespace}/jobs/{name}/status" in document["paths"]


async def test_v3_components_carry_gvk_for_kubectl_explain(served: Any) -> None:
    client, _ = served
    document = await (await client.get("/openapi/v3/api/v1")).json()
    components = document["components"]["schemas"]
    pod = components["io.k8s.api.core.v1.Pod"]
    assert pod["x-kubernetes-group-version-kind"] == [{"group": "", "kind": "Pod", "version": "v1"}]
    assert pod["properties"]["spec"]["$ref"] == "#/components/schemas/io.k8s.api.core.v1.PodSpec"
    assert pod["type"] == "object"
    assert "io.k8s.api.core.v1.Container" in components, "referenced definitions are included"
    int_or_string = components["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]
    assert int_or_string == {"type": "string", "format": "int-or-string"}
    containers = components["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    missing = await client.get("/openapi/v3/apis/nope/v1")
    assert missing.status == 404
    assert (await missing.json())["reason"] == "NotFound"


async def test_v2_json_and_protobuf(served: Any) -> None:
    client, _ = served
    protobuf = await client.get(
        "/openapi/v2", headers={"Accept": "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"}
    )
    assert protobuf.status == 200  # gnostic's openapi.v2.Document, which kubectl's validation reads
    assert (await protobuf.read()).startswith(b"\n\x032.0")
    assert (await client.get("/openapi/v2", headers={"Accept": "text/html"})).status == 406
    response = await client.get("/openapi/v2", headers={"Accept": "application/json"})
    assert response.status == 200
    document = await response.json()
    assert document["swagger"] == "2.0"
    assert document["definitions"]["io.k8s.api.core.v1.Pod"]["properties"]["spec"]["$ref"] == (
        "#/definitions/io.k8s.api.core.v1.PodSpec"
    )
    patch = document["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"]
    assert patch["x-kubernetes-group-version-kind"]["kind"] == "Pod"
    assert all("schema" not in p for p in patch["parameters"])


async def test_documents_follow_registry_changes_and_crd_schemas(served: Any) -> None:
    client, registry = served
    gvk = ("example.com", "v1", "Widget")
    schemas.register_crd_schema(gvk, {"type": "object", "properties": {"spec": {"type": "object"}}})
    try:
        registry.types.append(_Type("example.com", "v1", "widgets", "Widget"))
        registry.generation += 1
        paths = (await (await client.get("/openapi/v3")).json())["paths"]
        assert "apis/example.com/v1" in paths
        document = await (await client.get(paths["apis/example.com/v1"]["serverRelativeURL"])).json()
        widget = document["components"]["schemas"]["com.example.v1.Widget"]
        assert widget["x-kubernetes-group-version-kind"] == [
            {"group": "example.com", "kind": "Widget", "version": "v1"}
        ]
        assert widget["properties"]["metadata"]["$ref"] == (
            "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        )
        assert "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" in document["components"]["schemas"]
        cluster_path = "/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"
        assert document["paths"][cluster_path]["patch"]["x-kubernetes-group-version-kind"]["kind"] == "Widget"
    finally:
        schemas.unregister_crd_schema(gvk)


def test_convert_schema_types_and_refs() -> None:
    node = {
        "type": ["string", "null"],
        "items": {"$ref": "#/$defs/X"},
        "properties": {"a": {"oneOf": [{"type": ["string", "null"]}, {"type": ["number", "null"]}]}},
    }
    assert openapi.convert_schema(node, "#/definitions/") == {
        "type": "string",
        "items": {"$ref": "#/definitions/X"},
        "properties": {"a": {"type": "string"}},
    }
