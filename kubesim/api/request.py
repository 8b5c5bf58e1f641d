"""Request decoding shared by the handlers: path → target, Go-style query parameters, bodies, negotiation."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import orjson
import yaml
from aiohttp import web

from kubesim.codec import protobuf
from kubesim.codec.protobuf import ProtobufError
from kubesim.resources.catalog import Registry
from kubesim.resources.types import ResourceType
from kubesim.status import errors

JSON = dict[str, Any]

_TRUE = frozenset(("1", "t", "T", "TRUE", "true", "True"))
_FALSE = frozenset(("0", "f", "F", "FALSE", "false", "False"))
JSON_TYPES = ("application/json", "")
YAML_TYPES = ("application/yaml", "application/x-yaml", "text/yaml")


@dataclass(frozen=True)
class Target:
    """What a resource URL addresses."""

    rtype: ResourceType
    namespace: str  # "" for cluster-scoped types, or a namespaced list across all namespaces
    name: str = ""
    subresource: str = ""
    all_namespaces: bool = False
    legacy_watch: bool = False


def parse_bool(value: str | None, name: str) -> bool | None:
    """Go strconv.ParseBool; None when absent; 400 when unparsable."""
    if value is None:
        return None
    if value in _TRUE:
        return True
    if value in _FALSE or value == "":
        return False
    raise errors.bad_request(f'strconv.ParseBool: parsing "{value}": invalid syntax for parameter {name}')


def query_bool(request: web.Request, name: str) -> bool:
    return parse_bool(request.query.get(name), name) or False


def query_int(request: web.Request, name: str) -> int | None:
    raw = request.query.get(name)
    if raw is None or raw == "":
        return None
    try:
        return int(raw)
    except ValueError:
        raise errors.bad_request(
            f'strconv.ParseInt: parsing "{raw}": invalid syntax for parameter {name}'
        ) from None


_resolved: dict[tuple[int, int, str], tuple[Registry, Target | None]] = {}


def resolve(registry: Registry, path: str) -> Target | None:
    """Map /api/v1/... or /apis/<g>/<v>/... to a Target; None means 404 (unknown group/version/resource).
    Remembered per path until the registry changes: clients hit the same collection paths over and over."""
    key = (id(registry), registry.generation, path)
    hit = _resolved.get(key)
    if hit is not None and hit[0] is registry:
        return hit[1]
    target = _resolve(registry, path)
    if len(_resolved) >= 4096:
        _resolved.clear()
    _resolved[key] = (registry, target)
    return target


def _resolve(registry: Registry, path: str) -> Target | None:
    parts = [p for p in path.split("/") if p]
    if parts and parts[0] == "api" and len(parts) >= 3 and parts[1] == "v1":
        group, version, rest = "", "v1", parts[2:]
    elif parts and parts[0] == "apis" and len(parts) >= 4:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    legacy_watch = rest[0] == "watch"
    if legacy_watch:
        rest = rest[1:]
    namespace = ""
    namespaced_path = False
    if (
        len(rest) >= 3
        and rest[0] == "namespaces"
        and not (len(rest) == 3 and rest[2] in ("status", "finalize"))
    ):
        namespace, rest, namespaced_path = rest[1], rest[2:], True
    if not rest or len(rest) > 3:
        return None
    rtype = registry.get(group, version, rest[0])
    if rtype is None or (namespaced_path and not rtype.namespaced):
        return None
    name = rest[1] if len(rest) > 1 else ""
    sub = rest[2] if len(rest) > 2 else ""
    if sub and not (
        (sub == "status" and rtype.status)
        or (sub == "scale" and rtype.scale is not None)
        or (sub == "finalize" and rtype.plural == "namespaces" and not group)
        or (sub in ("binding", "eviction", "log") and rtype.plural == "pods" and not group)
        or (sub == "token" and rtype.plural == "serviceaccounts" and not group)
    ):
        return None
    all_namespaces = rtype.namespaced and not namespaced_path
    if all_namespaces and name:
        return None
    return Target(rtype, namespace, name, sub, all_namespaces, legacy_watch)


def media_type(header: str | None) -> str:
    return (header or "").split(";", 1)[0].strip().lower()


async def read_body(request: web.Request, limit: int) -> bytes:
    length = request.content_length
    if length is not None and length > limit:
        raise errors.too_large(limit)
    chunks: list[bytes] = []
    total = 0
    try:
        if length == 0:
            return b""
        if length is not None:
            return await request.content.readexactly(length)  # the common case: one read, no loop
        while chunk := await request.content.read(1 << 16):  # read() returns what has arrived: loop to EOF
            total += len(chunk)
            if total > limit:
                raise errors.too_large(limit)
            chunks.append(chunk)
    except errors.ApiError:
        raise
    except Exception as exc:  # client went away mid-body, broken chunking...
        raise errors.bad_request(f"error reading request body: {exc}") from None
    return b"".join(chunks)


_BRACKETS = re.compile(rb"[\[\]{}]")


MAX_DEPTH = (
    500  # nesting accepted in bodies and patches: far past real objects, well short of the recursion limit
)


def flow_depth(body: bytes) -> int:
    """Deepest nesting of YAML flow collections (brackets inside strings count too: an upper bound)."""
    if body.count(b"[") + body.count(b"{") <= _BoundedAliasLoader.max_depth:
        return 0
    depth = deepest = 0
    for match in _BRACKETS.finditer(body):
        depth += 1 if match.group() in (b"[", b"{") else -1
        deepest = max(deepest, depth)
    return deepest


class _BoundedAliasLoader(yaml.SafeLoader):
    """SafeLoader that refuses documents whose aliases expand to a huge tree (a YAML "billion laughs" would
    explode when serialised), as go-yaml refuses "excessive aliasing"."""

    max_expanded_nodes = 1_000_000
    max_depth = MAX_DEPTH
    depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self.depth += 1
        if self.depth > self.max_depth:
            raise yaml.YAMLError("exceeded max depth")
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def get_single_data(self) -> Any:
        node = self.get_single_node()
        if node is None:
            return None
        sizes: dict[int, int] = {}

        def expanded(current: yaml.Node) -> int:
            known = sizes.get(id(current))
            if known is None:
                children: list[Any] = []
                if isinstance(current, yaml.SequenceNode):
                    children = current.value
                elif isinstance(current, yaml.MappingNode):
                    children = [n for pair in current.value for n in pair]
                known = sizes[id(current)] = 1 + sum(expanded(child) for child in children)
            return known

        if expanded(node) > self.max_expanded_nodes:
            raise yaml.YAMLError("document contains excessive aliasing")
        return self.construct_document(node)


def decode_object(body: bytes, content_type: str, kind: str) -> JSON:
    """JSON (also when the Content-Type is missing) or YAML → dict; 400 when undecodable, 415 otherwise."""
    mtype = media_type(content_type)
    if mtype in JSON_TYPES:
        try:
            if flow_depth(body) > MAX_DEPTH:  # deeper trees would fail later, in recursive code, as a 500
                raise orjson.JSONDecodeError(f"exceeded max depth {MAX_DEPTH}", "", 0)
            obj = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise errors.bad_request(
                f"the object provided is unrecognized (must be of type {kind}): "
                f"couldn't get version/kind; json parse error: {exc}"
            ) from None
    elif mtype == protobuf.PROTOBUF:
        try:
            obj = protobuf.decode(body)
        except (ProtobufError, UnicodeDecodeError, KeyError) as exc:
            if "not supported" in str(exc):
                raise errors.unsupported_media_type(content_type) from None
            raise errors.bad_request(
                f"the object provided is unrecognized (must be of type {kind}): {exc}"
            ) from None
    elif mtype in YAML_TYPES:
        try:
            if flow_depth(body) > _BoundedAliasLoader.max_depth:
                raise yaml.YAMLError("exceeded max depth")  # before PyYAML's scanner slows down on it
            obj = yaml.load(body, Loader=_BoundedAliasLoader)
        except RecursionError:
            raise errors.bad_request(
                f"the object provided is unrecognized (must be of type {kind}): yaml: exceeded max depth"
            ) from None
        except yaml.YAMLError as exc:
            raise errors.bad_request(
                f"the object provided is unrecognized (must be of type {kind}): "
                f"yaml: {str(exc).splitlines()[0]}"
            ) from None
    else:
        raise errors.unsupported_media_type(content_type)
    if not isinstance(obj, dict):
        raise errors.bad_request(
            f"the object provided is unrecognized (must be of type {kind}): "
            "couldn't get version/kind; json parse error: expected an object"
        )
    check_meta_types(obj, kind)
    return obj


_META_STRINGS = (
    "name",
    "generateName",
    "namespace",
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "deletionTimestamp",
)


def _unmarshal_error(kind: str, field: str, go_type: str, value: Any) -> errors.ApiError:
    json_type = {
        dict: "object",
        list: "array",
        str: "string",
        bool: "bool",
        int: "number",
        float: "number",
    }.get(type(value), "value")
    return errors.bad_request(
        f'{kind} in version "v1" cannot be handled as a {kind}: json: cannot unmarshal '
        f"{json_type} into Go struct field {field} of type {go_type}"
    )


def check_meta_types(obj: JSON, kind: str) -> None:
    """ObjectMeta fields with the wrong JSON type fail decoding (400), as Go's decoder does."""
    meta = obj.get("metadata", {})
    if meta is None:
        obj["metadata"] = meta = {}
    if not isinstance(meta, dict):
        raise _unmarshal_error(kind, f"{kind}.metadata", "v1.ObjectMeta", meta)
    for name in _META_STRINGS:
        if name in meta and meta[name] is not None and not isinstance(meta[name], str):
            raise _unmarshal_error(kind, f"ObjectMeta.metadata.{name}", "string", meta[name])
    for name in ("labels", "annotations"):
        value = meta.get(name)
        if value is not None and (
            not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values())
        ):
            raise _unmarshal_error(kind, f"ObjectMeta.metadata.{name}", "map[string]string", value)
    finalizers = meta.get("finalizers")
    if finalizers is not None and (
        not isinstance(finalizers, list) or not all(isinstance(f, str) for f in finalizers)
    ):
        raise _unmarshal_error(kind, "ObjectMeta.metadata.finalizers", "[]string", finalizers)
    for name in ("ownerReferences", "managedFields"):
        value = meta.get(name)
        if value is not None and (not isinstance(value, list) or not all(isinstance(r, dict) for r in value)):
            raise _unmarshal_error(
                kind, f"ObjectMeta.metadata.{name}", "[]v1." + name[:-1].capitalize(), value
            )
    generation = meta.get("generation")
    if generation is not None and (not isinstance(generation, int) or isinstance(generation, bool)):
        raise _unmarshal_error(kind, "ObjectMeta.metadata.generation", "int64", generation)


def check_kind(obj: JSON, rtype: ResourceType, allowed_kinds: tuple[str, ...] = ()) -> None:
    """Fill apiVersion/kind when missing; 400 when the body is another type."""
    kind = obj.get("kind")
    api_version = obj.get("apiVersion")
    kinds = (rtype.kind, *allowed_kinds)
    if kind and kind not in kinds:
        raise errors.bad_request(
            f"the object provided is unrecognized (must be of type {rtype.kind}): "
            f"object kind {kind!r} does not match the expected kind {rtype.kind!r}"
        )
    if api_version and api_version != rtype.api_version and not allowed_kinds:
        raise errors.bad_request(
            f"the API version in the data ({api_version}) does not match the expected API "
            f"version ({rtype.api_version})"
        )
    if api_version and kind:
        keys = iter(obj)
        if next(keys) == "apiVersion" and next(keys) == "kind":
            return  # already in the apiserver's order (what clients send)
    rest = {k: obj.pop(k) for k in list(obj) if k not in ("apiVersion", "kind")}
    obj["apiVersion"] = api_version or rtype.api_version  # apiVersion and kind first, as the apiserver writes
    obj["kind"] = kind or rtype.kind
    obj.update(rest)


@dataclass(frozen=True)
class Accept:
    """What representation the client asked for."""

    as_kind: str = ""  # "", "Table", "PartialObjectMetadata", "PartialObjectMetadataList"
    yaml: bool = False


def negotiate(header: str | None) -> Accept:
    """Pick the first acceptable media type in order; 406 when none is."""
    if not header:
        return Accept()
    for clause in header.split(","):
        fields = [f.strip() for f in clause.split(";")]
        mtype = fields[0].lower()
        params = dict(f.split("=", 1) for f in fields[1:] if "=" in f)
        if mtype in ("application/json", "*/*", "application/*"):
            as_kind = params.get("as", "")
            if as_kind in ("Table", "PartialObjectMetadata", "PartialObjectMetadataList"):
                if params.get("g", "meta.k8s.io") == "meta.k8s.io" and params.get("v", "v1") in (
                    "v1",
                    "v1beta1",
                ):
                    return Accept(as_kind=as_kind)
                continue
            if as_kind:
                continue
            return Accept()
        if mtype in YAML_TYPES:
            return Accept(yaml=True)
    raise errors.not_acceptable()
