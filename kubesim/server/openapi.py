"""/openapi/v2 and /openapi/v3, generated from the real schemas (kubesim.schema.schemas) and the served types.

What clients need from these documents (the apiserver serves them from kube-openapi's
`pkg/handler/handler.go` (v2) and `pkg/handler3/handler.go` (v3); client-go reads v3 through
`staging/src/k8s.io/client-go/openapi3/root.go`):
- kubectl create/apply with default validation read `/openapi/v3`, then `/openapi/v3/<api/v1|apis/g/v>`;
  a `patch` operation carrying `x-kubernetes-group-version-kind` and a `fieldValidation` query parameter
  lets kubectl skip client-side validation and send `fieldValidation=Strict`.
- `kubectl explain` reads `components.schemas` entries tagged with `x-kubernetes-group-version-kind`.
- kubectl validating client-side (a kind its OpenAPI v3 lacks, e.g. a custom resource applied in the file that
  creates its CRD) asks `/openapi/v2` with a protobuf-only Accept and fails the object on any error: it gets
  gnostic's protobuf (kubesim.server.openapi_pb), skips kinds missing there, and the object then fails its
  REST mapping ("ensure CRDs are installed first"), as on a real cluster. JSON Accepts get Swagger 2 JSON.

`registry` is kubesim-core's `kubesim.resources.catalog.Registry`; only what `TypeRegistry` declares is used:
iteration over served types (`ServedType`: group, version, plural, kind, namespaced, and an optional
boolean `status` adding the /status paths) and `generation`. Custom kinds take their schema from
`kubesim.schema.schemas.register_crd_schema`. Documents are cached and rebuilt when `registry.generation`
changes (a CRD was established or removed).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from typing import Any, Protocol

import orjson
from aiohttp import web

from kubesim.schema import schemas
from kubesim.server import openapi_pb
from kubesim.status.body import status_body

JSON = dict[str, Any]
_DEFS_PREFIX = "#/$defs/"
_SERVER_VERSION = f"v1.{schemas.SERVER_MINOR}.0"
_V2_PROTOBUF_CONTENT_TYPE = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"


class ServedType(Protocol):
    """One served resource type (kubesim.resources.types.ResourceType fits)."""

    @property
    def group(self) -> str: ...
    @property
    def version(self) -> str: ...
    @property
    def plural(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def namespaced(self) -> bool: ...


class TypeRegistry(Protocol):
    """Iterating yields every served type; `generation` changes whenever the set of types changes."""

    @property
    def generation(self) -> int: ...
    def __iter__(self) -> Iterator[Any]: ...


def convert_schema(node: Any, ref_prefix: str) -> Any:
    """Turn a kubernetes-validate JSON-schema node back into OpenAPI (one `type`, refs under `ref_prefix`)."""
    if isinstance(node, list):
        return [convert_schema(item, ref_prefix) for item in node]
    if not isinstance(node, dict):
        return node
    if "oneOf" in node and all(isinstance(o, dict) and "type" in o for o in node["oneOf"]):
        variants = {t for o in node["oneOf"] for t in schemas.types(o)}
        result: JSON = {k: v for k, v in node.items() if k != "oneOf"}
        result["type"] = "string"
        if variants == {"string", "integer"}:
            result["format"] = "int-or-string"
        return result
    out: JSON = {}
    for key, value in node.items():
        if key == "$ref" and isinstance(value, str):
            out[key] = ref_prefix + value.removeprefix(_DEFS_PREFIX)
        elif key == "type" and isinstance(value, list):
            kept = [t for t in value if t != "null"]
            if kept:
                out[key] = kept[0]
        elif key in ("properties", "patternProperties", "definitions"):
            out[key] = {name: convert_schema(sub, ref_prefix) for name, sub in value.items()}
        else:
            out[key] = convert_schema(value, ref_prefix)
    return out


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value.removeprefix(_DEFS_PREFIX)
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item)


def _closure(names: Iterable[str]) -> list[str]:
    defs = schemas.definitions()
    seen: set[str] = set()
    todo = [n for n in names if n in defs]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(r for r in _refs(defs[name]) if r in defs and r not in seen)
    return sorted(seen)


def _custom_name(group: str, version: str, kind: str) -> str:
    return ".".join([*reversed(group.split(".")), version, kind])


def _custom_schema(rtype: Any) -> JSON:
    gvk = (rtype.group, rtype.version, rtype.kind)
    node = schemas.crd_schemas().get(gvk) or {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return {**node, "x-kubernetes-group-version-kind": [{"group": gvk[0], "kind": gvk[2], "version": gvk[1]}]}


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _param(name: str, where: str = "query", type_: str = "string") -> JSON:
    return {"name": name, "in": where, "schema": {"type": type_}, "uniqueItems": True}


def _operation(rtype: Any, action: str, op_id: str, ref: str, params: list[JSON], v2: bool) -> JSON:
    op: JSON = {
        "operationId": op_id,
        "parameters": [dict(p, type=p["schema"]["type"]) if v2 else p for p in params],
        "responses": {
            "200": {"description": "OK", "content": {"application/json": {"schema": {"$ref": ref}}}}
        },
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {
            "group": rtype.group,
            "version": rtype.version,
            "kind": rtype.kind,
        },
    }
    if v2:
        for p in op["parameters"]:
            p.pop("schema", None)
        op["responses"] = {"200": {"description": "OK", "schema": {"$ref": ref}}}
    return op


def _paths_for(rtype: Any, ref: str, v2: bool) -> JSON:
    prefix = "/" + _gv_path(rtype.group, rtype.version)
    collection = (
        f"{prefix}/namespaces/{{namespace}}/{rtype.plural}"
        if rtype.namespaced
        else f"{prefix}/{rtype.plural}"
    )
    op = f"{rtype.kind}{rtype.group.split('.')[0].title()}{rtype.version.title()}"
    writes = [_param("dryRun"), _param("fieldManager"), _param("fieldValidation"), _param("pretty")]
    patch_params = [*writes, _param("force", type_="boolean")]
    scope = [_param("namespace", "path")] if rtype.namespaced else []
    named = [*scope, _param("name", "path")]
    item_ops = {
        "get": _operation(rtype, "get", f"read{op}", ref, [_param("pretty")], v2),
        "put": _operation(rtype, "put", f"replace{op}", ref, writes, v2),
        "patch": _operation(rtype, "patch", f"patch{op}", ref, patch_params, v2),
        "delete": _operation(rtype, "delete", f"delete{op}", ref, [_param("dryRun")], v2),
    }
    paths: JSON = {
        collection: {
            "post": _operation(rtype, "post", f"create{op}", ref, writes, v2),
            "parameters": [dict(p, type="string") if v2 else p for p in scope],
        },
        f"{collection}/{{name}}": {**item_ops, "parameters": named},
    }
    if getattr(rtype, "status", False):
        paths[f"{collection}/{{name}}/status"] = {
            "get": _operation(rtype, "get", f"read{op}Status", ref, [_param("pretty")], v2),
            "put": _operation(rtype, "put", f"replace{op}Status", ref, writes, v2),
            "patch": _operation(rtype, "patch", f"patch{op}Status", ref, patch_params, v2),
            "parameters": named,
        }
    if v2:
        for path in paths.values():
            path["parameters"] = [
                {k: v for k, v in dict(p, type="string").items() if k != "schema"} for p in path["parameters"]
            ]
    return paths


def _type_schema_name(rtype: Any) -> tuple[str, JSON | None]:
    """Definition name for a served type, and its schema when it is not a built-in definition."""
    name = schemas.definition_name((rtype.group, rtype.version, rtype.kind))
    if name is not None and not schemas.is_custom((rtype.group, rtype.version, rtype.kind)):
        return name, None
    return _custom_name(rtype.group, rtype.version, rtype.kind), _custom_schema(rtype)


def build_v2(registry: Iterable[Any]) -> JSON:
    defs = schemas.definitions()
    definitions = {name: convert_schema(node, "#/definitions/") for name, node in defs.items()}
    paths: JSON = {}
    for rtype in registry:
        name, custom = _type_schema_name(rtype)
        if custom is not None:
            definitions[name] = convert_schema(custom, "#/definitions/")
        paths.update(_paths_for(rtype, f"#/definitions/{name}", v2=True))
    return {
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": _SERVER_VERSION},
        "paths": paths,
        "definitions": definitions,
    }


def build_v3_group_versions(registry: Iterable[Any]) -> dict[str, JSON]:
    """One OpenAPI 3 document per served group-version, keyed by `api/v1` / `apis/<group>/<version>`."""
    by_gv: dict[str, list[Any]] = {}
    for rtype in registry:
        by_gv.setdefault(_gv_path(rtype.group, rtype.version), []).append(rtype)
    documents: dict[str, JSON] = {}
    defs = schemas.definitions()
    prefix = "#/components/schemas/"
    for gv, rtypes in by_gv.items():
        paths: JSON = {}
        components: JSON = {}
        builtin_names: list[str] = []
        for rtype in rtypes:
            name, custom = _type_schema_name(rtype)
            if custom is None:
                builtin_names.append(name)
            else:
                components[name] = convert_schema(custom, prefix)
                builtin_names.extend(_refs(custom))
            paths.update(_paths_for(rtype, prefix + name, v2=False))
        for name in _closure(builtin_names):
            components[name] = convert_schema(defs[name], prefix)
        documents[gv] = {
            "openapi": "3.0.0",
            "info": {"title": "Kubernetes", "version": _SERVER_VERSION},
            "paths": paths,
            "components": {"schemas": components},
        }
    return documents


class _Documents:
    """Serialized documents for one registry generation."""

    def __init__(self, registry: TypeRegistry) -> None:
        self.generation = registry.generation
        self._registry = list(registry)
        self._v2: bytes | None = None
        self._v2_protobuf: bytes | None = None
        self.v3: dict[str, bytes] = {
            gv: orjson.dumps(doc) for gv, doc in build_v3_group_versions(self._registry).items()
        }
        self.hashes = {gv: hashlib.sha512(body).hexdigest().upper() for gv, body in self.v3.items()}
        self.v3_root = orjson.dumps(
            {
                "paths": {
                    gv: {"serverRelativeURL": f"/openapi/v3/{gv}?hash={digest}"}
                    for gv, digest in self.hashes.items()
                }
            }
        )

    @property
    def v2(self) -> bytes:
        if self._v2 is None:
            self._v2 = orjson.dumps(build_v2(self._registry))
        return self._v2

    @property
    def v2_protobuf(self) -> bytes:
        if self._v2_protobuf is None:
            self._v2_protobuf = openapi_pb.encode_document(orjson.loads(self.v2))
        return self._v2_protobuf


def _v2_form(request: web.Request) -> str | None:
    """ "json" or "protobuf" by the first Accept clause naming one (kube-openapi negotiates in the client's
    order), None when neither is acceptable."""
    accept = request.headers.get("Accept", "")
    if not accept:
        return "json"
    for part in accept.split(","):
        kind = part.split(";")[0].strip()
        if kind == openapi_pb.MEDIA_TYPE:
            return "protobuf"
        if kind in ("application/json", "*/*", "application/*"):
            return "json"
    return None


def add_routes(app: web.Application, registry: TypeRegistry) -> None:
    """Serve /openapi/v2, /openapi/v3 and /openapi/v3/{group-version path}."""
    cache: list[_Documents] = []

    def documents() -> _Documents:
        if not cache or cache[0].generation != registry.generation:
            cache[:] = [_Documents(registry)]
        return cache[0]

    def json_body(body: bytes) -> web.Response:
        return web.Response(body=body, content_type="application/json")

    async def v2(request: web.Request) -> web.Response:
        form = _v2_form(request)
        if form == "protobuf":
            return web.Response(body=documents().v2_protobuf, content_type=_V2_PROTOBUF_CONTENT_TYPE)
        if form is None:
            status = status_body(
                "Failure",
                message="only the following media types are accepted: application/json, "
                + openapi_pb.MEDIA_TYPE,
                reason="NotAcceptable",
                code=406,
            )
            return web.Response(status=406, body=orjson.dumps(status), content_type="application/json")
        return json_body(documents().v2)

    async def v3_root(request: web.Request) -> web.Response:
        return json_body(documents().v3_root)

    async def v3_group_version(request: web.Request) -> web.Response:
        body = documents().v3.get(request.match_info["gv"])
        if body is None:
            status = status_body(
                "Failure",
                message="the server could not find the requested resource",
                reason="NotFound",
                details={},
                code=404,
            )
            return web.Response(status=404, body=orjson.dumps(status), content_type="application/json")
        return json_body(body)

    app.router.add_get("/openapi/v2", v2)
    app.router.add_get("/openapi/v3", v3_root)
    app.router.add_get("/openapi/v3/{gv:.+}", v3_group_version)
