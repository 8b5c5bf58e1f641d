"""CRDs generated from pydantic models are structural: no $ref, no anyOf/oneOf, every node typed or marked."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from manager.apimachinery.customresource import (
    CustomResource,
    PrinterColumn,
    SchemaError,
    crd,
    openapi_schema,
)


class Color(StrEnum):
    RED = "red"
    BLUE = "blue"


class Port(BaseModel):
    name: str
    number: int = Field(gt=0, lt=65536)


class Loose(BaseModel):
    model_config = ConfigDict(extra="allow")
    known: str = "x"


class Spec(BaseModel):
    message: str = Field(min_length=1, max_length=64, pattern="^[A-Z]", description="Said.")
    replicas: int = Field(1, ge=0)
    ratio: float | None = None
    color: Color = Color.RED
    mode: Literal["fast", "slow"] = "fast"
    ports: list[Port] = []
    primary: Port | None = None
    labels: dict[str, str] = {}
    anything: Any = None
    target: int | str = 80
    loose: Loose = Loose()


class Status(BaseModel):
    conditions: list[dict[str, Any]] = []


class Widget(CustomResource):
    """A widget."""

    group = "example.aiokcm.io"
    version = "v1alpha1"
    kind = "Widget"
    short_names = ("wd",)
    categories = ("all",)
    printer_columns = (PrinterColumn("Replicas", "integer", ".spec.replicas", priority=1),)
    spec: Spec
    status: Status | None = None


class Policy(CustomResource):
    group = "example.aiokcm.io"
    version = "v1"
    kind = "Policy"
    scope = "Cluster"
    spec: dict[str, Any]


def walk(node: Any, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    found = []
    if isinstance(node, dict):
        if (
            "type" in node
            or "x-kubernetes-preserve-unknown-fields" in node
            or "x-kubernetes-int-or-string" in node
        ):
            found.append((path, node))
        for key, value in node.items():
            found.extend(walk(value, f"{path}.{key}"))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found.extend(walk(value, f"{path}[{index}]"))
    return found


def test_the_schema_is_structural() -> None:
    schema = openapi_schema(Widget)
    text = repr(schema)
    for forbidden in ("$ref", "anyOf", "oneOf", "allOf", "$defs", "title", "'const'"):
        assert forbidden not in text, forbidden
    for path, node in walk(schema):
        assert (
            "type" in node
            or node.get("x-kubernetes-preserve-unknown-fields")
            or node.get("x-kubernetes-int-or-string")
        ), path
        assert not ("properties" in node and "additionalProperties" in node), path
        assert node.get("additionalProperties") is not False, path
        if node.get("default", 0) is None:
            raise AssertionError(f"{path}: null default")


def test_each_field_maps_to_its_openapi_form() -> None:
    spec = openapi_schema(Widget)["properties"]["spec"]
    props = spec["properties"]
    assert spec["required"] == ["message"]
    assert props["message"] == {
        "description": "Said.",
        "maxLength": 64,
        "minLength": 1,
        "pattern": "^[A-Z]",
        "type": "string",
    }
    assert props["replicas"] == {"default": 1, "minimum": 0, "type": "integer"}
    assert props["ratio"] == {"type": "number", "nullable": True}
    assert props["color"]["enum"] == ["red", "blue"] and props["color"]["type"] == "string"
    assert props["mode"]["enum"] == ["fast", "slow"] and props["mode"]["type"] == "string"
    port = props["ports"]["items"]
    assert port["type"] == "object" and port["required"] == ["name", "number"]
    assert port["properties"]["number"] == {
        "type": "integer",
        "minimum": 0,
        "exclusiveMinimum": True,
        "maximum": 65536,
        "exclusiveMaximum": True,
    }
    assert props["primary"]["nullable"] is True and props["primary"]["type"] == "object"
    assert props["labels"]["additionalProperties"] == {"type": "string"}
    assert props["anything"] == {"x-kubernetes-preserve-unknown-fields": True}
    assert props["target"]["x-kubernetes-int-or-string"] is True
    assert props["loose"]["x-kubernetes-preserve-unknown-fields"] is True
    assert "known" in props["loose"]["properties"]


def test_the_crd_carries_names_scope_status_and_columns() -> None:
    definition = crd(Widget)
    assert definition["metadata"]["name"] == "widgets.example.aiokcm.io"
    spec = definition["spec"]
    assert spec["names"] == {
        "kind": "Widget",
        "listKind": "WidgetList",
        "plural": "widgets",
        "singular": "widget",
        "shortNames": ["wd"],
        "categories": ["all"],
    }
    assert spec["scope"] == "Namespaced"
    [version] = spec["versions"]
    assert version["name"] == "v1alpha1" and version["served"] and version["storage"]
    assert version["subresources"] == {"status": {}}
    assert version["additionalPrinterColumns"] == [
        {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas", "priority": 1}
    ]
    schema = version["schema"]["openAPIV3Schema"]
    assert schema["description"] == "A widget."
    assert set(schema["properties"]) == {"apiVersion", "kind", "metadata", "spec", "status"}


def test_a_cluster_scoped_resource_without_status() -> None:
    definition = crd(Policy)
    assert definition["spec"]["scope"] == "Cluster"
    assert "subresources" not in definition["spec"]["versions"][0]
    assert Policy.gvr().namespaced is False
    assert definition["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"] == {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
    }


@pytest.mark.parametrize(
    ("kind", "plural"), [("Policy", "policies"), ("Gateway", "gateways"), ("Box", "boxes")]
)
def test_plurals(kind: str, plural: str) -> None:
    model: type[CustomResource] = type(
        kind, (CustomResource,), {"__annotations__": {}, "group": "g.io", "version": "v1", "kind": kind}
    )
    assert model.plural_name() == plural


def test_unions_and_recursion_are_refused_naming_the_field() -> None:
    class Union(BaseModel):
        value: int | list[str]

    class Node(BaseModel):
        children: list[Node] = []

    class WithUnion(CustomResource):
        group, version, kind = "g.io", "v1", "WithUnion"
        spec: Union

    class WithTree(CustomResource):
        group, version, kind = "g.io", "v1", "WithTree"
        spec: Node

    with pytest.raises(SchemaError, match=r"spec\.value"):
        crd(WithUnion)
    with pytest.raises(SchemaError, match="recursive"):
        crd(WithTree)


def test_from_object_keeps_the_raw_object_and_validates() -> None:
    raw = {
        "apiVersion": "example.aiokcm.io/v1alpha1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "ns", "resourceVersion": "7", "generation": 2},
        "spec": {"message": "Hi", "target": "http"},
    }
    widget = Widget.from_object(raw)
    assert widget.raw is raw
    assert widget.metadata.resource_version == "7" and widget.metadata.generation == 2
    assert widget.spec.target == "http" and widget.status is None
    with pytest.raises(ValidationError):
        Widget.from_object({**raw, "spec": {"message": "Hi", "replicas": -1}})


def test_aliases_name_the_fields_in_the_schema_and_when_reading() -> None:
    class Status(BaseModel):
        observed_generation: int | None = Field(None, alias="observedGeneration")

    class Aliased(CustomResource):
        group, version, kind = "g.io", "v1", "Aliased"
        spec: dict[str, Any] = {}
        status: Status | None = None

    schema = openapi_schema(Aliased)["properties"]["status"]
    assert schema["properties"] == {"observedGeneration": {"type": "integer", "nullable": True}}
    read = Aliased.from_object({"metadata": {"name": "a"}, "status": {"observedGeneration": 4}})
    assert read.status is not None and read.status.observed_generation == 4
