"""Request decoding shared by the handlers: path → target, bodies, negotiation; the Go-style query parameters
live in `kubesim.api.params` (re-exported here)."""

from __future__ import annotations

import asyncio
import functools
import re
from dataclasses import dataclass
from typing import Any

import orjson
import yaml
from aiohttp import web

from kubesim.api import wholebody
from kubesim.api.params import check_list_options as check_list_options
from kubesim.api.params import parse_bool as parse_bool
from kubesim.api.params import parse_int as parse_int
from kubesim.api.params import query_bool as query_bool
from kubesim.api.params import query_int as query_int
from kubesim.api.yamlbody import BodyLoader
from kubesim.codec import protobuf
from kubesim.codec.protobuf import ProtobufError
from kubesim.resources.catalog import Registry
from kubesim.resources.types import ResourceType
from kubesim.status import errors
from kubesim.validation.decode_types import decode_message
from kubesim.validation.meta_types import meta_type_error
from kubesim.validation.nesting import MAX_DEPTH

JSON = dict[str, Any]

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
            content = request.content
            if content.is_eof() and content.total_bytes == length:
                data = wholebody.take(content, length)  # the whole body has arrived (the common case)
                if len(data) == length:
                    return data
                raise asyncio.IncompleteReadError(data, length)  # what readexactly says
            return await content.readexactly(length)
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


def flow_depth(body: bytes) -> int:
    """Deepest nesting of YAML flow collections (brackets inside strings count too: an upper bound)."""
    if len(body) <= MAX_DEPTH or body.count(b"[") + body.count(b"{") <= MAX_DEPTH:  # short: too few brackets
        return 0
    depth = deepest = 0
    for match in _BRACKETS.finditer(body):
        depth += 1 if match.group() in (b"[", b"{") else -1
        deepest = max(deepest, depth)
    return deepest


def decode_object(body: bytes, content_type: str, kind: str, version: str = "v1") -> JSON:
    """JSON (also when the Content-Type is missing) or YAML → dict; 400 when undecodable, 415 otherwise."""
    mtype = media_type(content_type)
    if mtype in JSON_TYPES:
        try:
            if flow_depth(body) > MAX_DEPTH:  # deeper trees would fail later, in the store, as a 500
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
            if flow_depth(body) > MAX_DEPTH:
                raise yaml.YAMLError("exceeded max depth")  # before PyYAML's scanner slows down on it
            obj = yaml.load(body, Loader=BodyLoader)
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
    check_meta_types(obj, kind, version)
    return obj


def check_meta_types(obj: JSON, kind: str, version: str = "v1") -> None:
    """ObjectMeta fields with the wrong JSON type fail decoding (400), as Go's decoder does."""
    meta = obj.get("metadata", {})
    if meta is None:
        obj["metadata"] = meta = {}
    wrong = meta_type_error(meta, kind)
    if wrong:
        raise errors.bad_request(
            f'{kind} in version "{version}" cannot be handled as a {kind}: {decode_message(wrong)}'
        )


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
    obj.clear()
    obj["apiVersion"] = api_version or rtype.api_version  # apiVersion and kind first, as the apiserver writes
    obj["kind"] = kind or rtype.kind
    obj.update(rest)


@dataclass(frozen=True)
class Accept:
    """What representation the client asked for."""

    as_kind: str = ""  # "", "Table", "PartialObjectMetadata", "PartialObjectMetadataList"
    yaml: bool = False


_PLAIN = Accept()


def negotiate(header: str | None) -> Accept:
    """Pick the first acceptable media type in order; 406 when none is."""
    if not header:
        return _PLAIN
    return _negotiate(header)


@functools.lru_cache(maxsize=256)  # a client sends the same few Accept headers on every request
def _negotiate(header: str) -> Accept:
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
            return _PLAIN
        if mtype in YAML_TYPES:
            return Accept(yaml=True)
    raise errors.not_acceptable()
