"""Typed custom resources: a pydantic model per kind, its GroupVersionResource, and its CRD.

    class GreetingSpec(BaseModel):
        message: str = Field(min_length=1)
        replicas: int = Field(1, ge=0)

    class GreetingStatus(BaseModel):
        conditions: list[dict[str, Any]] = []

    class Greeting(CustomResource):
        group = "demo.example.com"
        version = "v1"
        kind = "Greeting"
        short_names = ("gr",)
        printer_columns = (PrinterColumn("Message", "string", ".spec.message"),)
        spec: GreetingSpec
        status: GreetingStatus | None = None

    GREETINGS = Greeting.gvr()  # for listers and the client (objects read as dicts)

`crd(Greeting)` is the apiextensions.k8s.io/v1 CustomResourceDefinition, its openAPIV3Schema derived from the
model as a structural schema (references inlined, `X | None` as `nullable`, `Any` and extra-allowing models as
`x-kubernetes-preserve-unknown-fields`, `int | str` as `x-kubernetes-int-or-string`), with the status
subresource when the model has a `status` field. `aiokcm crd module:Class` prints it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from manager.apimachinery.resources import GroupVersionResource

Obj = dict[str, Any]


class ObjectMeta(BaseModel):
    """The metadata fields a controller reads; the others are kept (extra="allow")."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    name: str
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = Field(None, alias="resourceVersion")
    generation: int | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    finalizers: list[str] = Field(default_factory=list)
    deletion_timestamp: str | None = Field(None, alias="deletionTimestamp")


@dataclass(frozen=True, slots=True)
class PrinterColumn:
    """One `additionalPrinterColumns` entry (kubectl get's columns)."""

    name: str
    type: Literal["string", "integer", "number", "boolean", "date"]
    json_path: str
    description: str = ""
    priority: int = 0

    def to_dict(self) -> Obj:
        column: Obj = {"name": self.name, "type": self.type, "jsonPath": self.json_path}
        if self.description:
            column["description"] = self.description
        if self.priority:
            column["priority"] = self.priority
        return column


class CustomResource(BaseModel):
    """Base of a typed custom resource: subclasses set the class variables and declare `spec` (and usually
    `status`) fields as pydantic models. Instances are validated objects (`Greeting.model_validate(obj)`);
    unknown top-level fields (apiVersion, kind) are ignored."""

    model_config = ConfigDict(extra="ignore")

    group: ClassVar[str]
    version: ClassVar[str]
    kind: ClassVar[str]
    plural: ClassVar[str | None] = None
    singular: ClassVar[str | None] = None
    short_names: ClassVar[tuple[str, ...]] = ()
    categories: ClassVar[tuple[str, ...]] = ()
    scope: ClassVar[Literal["Namespaced", "Cluster"]] = "Namespaced"
    printer_columns: ClassVar[tuple[PrinterColumn, ...]] = ()

    metadata: ObjectMeta
    _raw: Obj = PrivateAttr(default_factory=dict)

    @property
    def raw(self) -> Obj:
        """The object as read from the cache (for owner references, events, patches): never modify it."""
        return self._raw

    @classmethod
    def from_object(cls, obj: Obj) -> Self:
        """Validate `obj` (raises pydantic's ValidationError) and keep it as `raw`."""
        typed = cls.model_validate(obj)
        typed._raw = obj
        return typed

    @classmethod
    def plural_name(cls) -> str:
        return cls.plural or _pluralize(cls.kind.lower())

    @classmethod
    def gvr(cls) -> GroupVersionResource[Obj]:
        """The resource's address, for listers, informers, watches and the client."""
        return GroupVersionResource(
            cls.group, cls.version, cls.plural_name(), cls.kind, namespaced=cls.scope == "Namespaced"
        )


def _pluralize(word: str) -> str:
    if word.endswith("y") and word[-2:-1] not in ("a", "e", "i", "o", "u"):
        return word[:-1] + "ies"
    if word.endswith(("s", "x", "z", "ch", "sh")):
        return word + "es"
    return word + "s"


class SchemaError(ValueError):
    """The model cannot be expressed as a structural schema; the message names the field."""


# Keywords a structural schema keeps as they are (pydantic's `title` and the like are dropped).
_KEPT = {
    "description",
    "default",
    "enum",
    "format",
    "pattern",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "multipleOf",
    "uniqueItems",
}


def _structural(node: Obj, defs: Obj, path: str, seen: tuple[str, ...] = ()) -> Obj:
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        if name in seen:
            raise SchemaError(f"{path}: recursive model {name} cannot be a structural schema")
        target = {**defs[name], **{k: v for k, v in node.items() if k != "$ref"}}
        return _structural(target, defs, path, (*seen, name))
    for combinator in ("anyOf", "oneOf"):
        if combinator in node:
            options = node[combinator]
            rest = {k: v for k, v in node.items() if k != combinator}
            non_null = [o for o in options if o.get("type") != "null"]
            nullable = len(non_null) < len(options)
            if len(non_null) == 1:
                out = _structural({**non_null[0], **rest}, defs, path, seen)
            elif {o.get("type") for o in non_null} == {"integer", "string"} and len(non_null) == 2:
                out = {"x-kubernetes-int-or-string": True}
                out.update({k: v for k, v in rest.items() if k in _KEPT and v is not None})
            else:
                raise SchemaError(f"{path}: a union of several types has no structural schema")
            if nullable:
                out["nullable"] = True
            return out
    if "allOf" in node and len(node["allOf"]) == 1:  # pydantic wraps a referenced model with a default
        rest = {k: v for k, v in node.items() if k != "allOf"}
        return _structural({**node["allOf"][0], **rest}, defs, path, seen)
    out = {k: v for k, v in node.items() if k in _KEPT}
    if out.get("default", 0) is None:  # a null default is no default (and only valid when nullable)
        del out["default"]
    if "const" in node:
        out["enum"] = [node["const"]]
    for bound, plain in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if bound in node:  # JSON Schema 2020's number to OpenAPI v3.0's boolean
            out[plain] = node[bound]
            out[bound] = True
    kind = node.get("type")
    if kind is None and "enum" in node:
        kinds = {type(v) for v in node["enum"]}
        kind = "string" if kinds == {str} else "integer" if kinds == {int} else None
    if kind is None:
        out["x-kubernetes-preserve-unknown-fields"] = True
        return out
    if kind == "null":
        raise SchemaError(f"{path}: a field that can only be null has no structural schema")
    out["type"] = kind
    if kind == "array":
        out["items"] = _structural(node.get("items") or {}, defs, f"{path}[*]", seen)
    elif kind == "object":
        properties = node.get("properties")
        extra = node.get("additionalProperties")
        if properties:
            out["properties"] = {
                name: _structural(sub, defs, f"{path}.{name}", seen) for name, sub in properties.items()
            }
            if node.get("required"):
                out["required"] = list(node["required"])
            if extra is True or isinstance(extra, dict):
                out["x-kubernetes-preserve-unknown-fields"] = True
        elif isinstance(extra, dict):
            out["additionalProperties"] = _structural(extra, defs, f"{path}.*", seen)
        elif extra is not False:
            out["x-kubernetes-preserve-unknown-fields"] = True
    return out


def openapi_schema(model: type[CustomResource]) -> Obj:
    """The structural openAPIV3Schema of the model's objects (`metadata` left to the API server)."""
    full = model.model_json_schema(by_alias=True, mode="validation")
    defs = full.get("$defs", {})
    properties: Obj = {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
    }
    required = []
    for name, sub in (full.get("properties") or {}).items():
        if name == "metadata":
            continue
        properties[name] = _structural(sub, defs, name)
        if name in (full.get("required") or ()):
            required.append(name)
    schema: Obj = {"type": "object", "properties": properties}
    if model.__doc__ and model.__doc__ is not CustomResource.__doc__:
        schema["description"] = " ".join(model.__doc__.split())
    if required:
        schema["required"] = required
    return schema


def crd(model: type[CustomResource]) -> Obj:
    """The apiextensions.k8s.io/v1 CustomResourceDefinition of `model` (one served, stored version)."""
    plural = model.plural_name()
    names: Obj = {"kind": model.kind, "listKind": f"{model.kind}List", "plural": plural}
    names["singular"] = model.singular or model.kind.lower()
    if model.short_names:
        names["shortNames"] = list(model.short_names)
    if model.categories:
        names["categories"] = list(model.categories)
    version: Obj = {
        "name": model.version,
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": openapi_schema(model)},
    }
    if "status" in model.model_fields:
        version["subresources"] = {"status": {}}
    if model.printer_columns:
        version["additionalPrinterColumns"] = [c.to_dict() for c in model.printer_columns]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{model.group}"},
        "spec": {"group": model.group, "names": names, "scope": model.scope, "versions": [version]},
    }
