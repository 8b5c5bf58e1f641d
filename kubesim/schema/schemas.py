"""The real Kubernetes schemas, indexed by group/version/kind.

Source: the JSON-schema definitions bundled with the `kubernetes-validate` package
(`kubernetes-json-schema/v<minor>.x-local/_definitions.json`), which keep the OpenAPI extensions that drive
patching and apply: `x-kubernetes-group-version-kind`, `x-kubernetes-patch-strategy`,
`x-kubernetes-patch-merge-key`, `x-kubernetes-list-type`, `x-kubernetes-list-map-keys`,
`x-kubernetes-map-type`. The version matching the emulated server (`SERVER_MINOR`) is preferred, else the
newest. Custom resources add their CRD's `openAPIV3Schema` with `register_crd_schema`.

Navigation works on schema *nodes* (dicts): `root(gvk)`, then `child(node, field)` / `items(node)`; `$ref`s
are resolved on the way (sibling keys of a `$ref`, e.g. list extensions, are kept). `node_at(gvk, path)` does
the walk in one call; list items are addressed with any int in the path.
"""

from __future__ import annotations

import functools
import importlib.resources
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

JSON = dict[str, Any]
GVK = tuple[str, str, str]

SERVER_MINOR = 32
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_REF_PREFIX = "#/$defs/"

_crd_schemas: dict[GVK, JSON] = {}
# memo tables keyed by id(node); each entry keeps its node alive so that the id cannot be reused
_resolved: dict[int, tuple[JSON, JSON]] = {}
_child_cache: dict[tuple[int, str], tuple[JSON, JSON | None]] = {}
_info_cache: dict[int, tuple[JSON, FieldInfo]] = {}
_preserve_cache: dict[int, tuple[JSON, bool]] = {}
_roots: dict[GVK, JSON | None] = {}  # root(gvk), asked several times per write
# other modules' memo tables over nodes, cleared with these when a CRD schema changes
memo_tables: list[dict[Any, Any]] = []


@dataclass(frozen=True)
class FieldInfo:
    """Merge semantics of one field (from the OpenAPI extensions)."""

    patch_strategy: str | None = None  # "merge", "retainKeys", "merge,retainKeys", "replace"
    merge_key: str | None = None
    list_type: str | None = None  # "atomic" | "set" | "map" (None for non-lists)
    list_map_keys: tuple[str, ...] = ()
    map_type: str | None = None  # "atomic" | "granular" for objects


_NO_INFO = FieldInfo()


def _version_key(name: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", name))


def _schema_dir_name(names: Iterable[str]) -> str:
    plain = [n for n in names if re.fullmatch(r"v\d+\.\d+\.\d+-local", n)]
    if not plain:
        raise RuntimeError("kubernetes-validate ships no *-local schema directory")
    plain.sort(key=_version_key)
    matching = [n for n in plain if _version_key(n)[:2] == (1, SERVER_MINOR)]
    return (matching or plain)[-1]


@functools.cache
def schema_version() -> str:
    """Name of the bundled schema set in use, e.g. `v1.32.0-local`."""
    base = importlib.resources.files("kubernetes_validate") / "kubernetes-json-schema"
    return _schema_dir_name(entry.name for entry in base.iterdir())


@functools.cache
def definitions() -> dict[str, JSON]:
    """All built-in definitions by name (`io.k8s.api.core.v1.Pod`), loaded once."""
    path = importlib.resources.files("kubernetes_validate") / "kubernetes-json-schema" / schema_version()
    document = json.loads((path / "_definitions.json").read_bytes())
    defs: dict[str, JSON] = document["$defs"]
    return defs


@functools.cache
def _gvk_index() -> dict[GVK, str]:
    index: dict[GVK, str] = {}
    shared: dict[GVK, str] = {}
    for name, node in definitions().items():
        gvks = node.get("x-kubernetes-group-version-kind") or []
        # DeleteOptions, WatchEvent... are listed under every group: a kind's own definition wins
        target = index if len(gvks) == 1 else shared
        for entry in gvks:
            target.setdefault((entry.get("group", ""), entry["version"], entry["kind"]), name)
    for gvk, name in shared.items():
        index.setdefault(gvk, name)
    return index


def definition_name(gvk: GVK) -> str | None:
    """Definition name of a built-in kind (None for custom or unknown kinds)."""
    return _gvk_index().get(gvk)


def builtin_gvks() -> list[GVK]:
    return list(_gvk_index())


def register_crd_schema(gvk: GVK, schema: JSON) -> None:
    """Register (or replace) the openAPIV3Schema of a custom resource version once its CRD is established."""
    properties = dict(schema.get("properties") or {})
    properties["apiVersion"] = {"type": "string"}
    properties["kind"] = {"type": "string"}
    properties["metadata"] = {"$ref": _REF_PREFIX + OBJECT_META}
    _crd_schemas[gvk] = {**schema, "type": "object", "properties": properties}
    _forget_custom_nodes()


def unregister_crd_schema(gvk: GVK) -> None:
    _crd_schemas.pop(gvk, None)
    _forget_custom_nodes()


def _forget_custom_nodes() -> None:
    """Drop the memo tables, which would otherwise keep replaced CRD schemas alive."""
    tables: list[dict[Any, Any]] = [
        _resolved,
        _child_cache,
        _info_cache,
        _preserve_cache,
        _roots,
        *memo_tables,
    ]
    for table in tables:
        table.clear()


def crd_schemas() -> dict[GVK, JSON]:
    """Registered custom resource schemas (with apiVersion/kind/metadata filled in)."""
    return dict(_crd_schemas)


def is_custom(gvk: GVK) -> bool:
    return gvk in _crd_schemas


def is_builtin(gvk: GVK) -> bool:
    return gvk not in _crd_schemas and definition_name(gvk) is not None


def resolve(node: JSON | None) -> JSON | None:
    """Follow `$ref` (keeping the referring node's own keys, which win)."""
    if node is None or "$ref" not in node:
        return node
    cached = _resolved.get(id(node))
    if cached is not None and cached[0] is node:
        return cached[1]
    target = resolve(definitions().get(node["$ref"].removeprefix(_REF_PREFIX)))
    if target is None:
        return None
    extra = {k: v for k, v in node.items() if k not in ("$ref", "description")}
    result = {**target, **extra} if extra else target
    _resolved[id(node)] = (node, result)
    return result


def root(gvk: GVK) -> JSON | None:
    """Top-level schema of a kind (custom resources first), or None if unknown."""
    try:
        return _roots[gvk]
    except KeyError:
        pass
    found = _crd_schemas.get(gvk)
    if found is None:
        name = definition_name(gvk)
        found = resolve(definitions()[name]) if name else None
    if len(_roots) >= 4096:  # kinds named by request bodies: bounded
        _roots.clear()
    _roots[gvk] = found
    return found


def types(node: JSON) -> set[str]:
    """JSON types a node allows, without `null` (empty for int-or-string, quantities and free JSON)."""
    declared = node.get("type")
    if isinstance(declared, str):
        return {declared}
    if isinstance(declared, list):
        return {t for t in declared if t != "null"}
    return set()


def is_list(node: JSON) -> bool:
    return "array" in types(node)


def preserves_unknown(node: JSON) -> bool:
    """True where any field is accepted: free-form JSON or `x-kubernetes-preserve-unknown-fields`."""
    hit = _preserve_cache.get(id(node))
    if hit is not None and hit[0] is node:
        return hit[1]
    result = bool(node.get("x-kubernetes-preserve-unknown-fields")) or (
        not types(node) and "oneOf" not in node and "anyOf" not in node and "properties" not in node
    )
    _preserve_cache[id(node)] = (node, result)
    return result


def child(node: JSON | None, field: str) -> JSON | None:
    """Schema of `field` inside an object node (a property, or the map's value schema)."""
    if node is None:
        return None
    properties = node.get("properties")
    key = (id(node), field if properties and field in properties else "*")
    hit = _child_cache.get(key)
    if hit is not None and hit[0] is node:
        return hit[1]
    result: JSON | None = None
    if properties and field in properties:
        result = resolve(properties[field])
    else:
        additional = node.get("additionalProperties")
        if isinstance(additional, dict):
            result = resolve(additional)
    _child_cache[key] = (node, result)
    return result


def items(node: JSON | None) -> JSON | None:
    if node is None:
        return None
    element = node.get("items")
    return resolve(element) if isinstance(element, dict) else None


def node_at(gvk: GVK, path: Sequence[str | int]) -> JSON | None:
    """Schema node at `path` (field names; ints step into list items), or None when unknown."""
    node = root(gvk)
    for step in path:
        node = items(node) if isinstance(step, int) else child(node, step)
        if node is None:
            return None
    return node


def field_info(node: JSON | None) -> FieldInfo:
    if node is None:
        return _NO_INFO
    hit = _info_cache.get(id(node))
    if hit is not None and hit[0] is node:
        return hit[1]
    list_type = node.get("x-kubernetes-list-type")
    if list_type is None and is_list(node):
        list_type = "atomic"
    info = FieldInfo(
        patch_strategy=node.get("x-kubernetes-patch-strategy"),
        merge_key=node.get("x-kubernetes-patch-merge-key"),
        list_type=list_type,
        list_map_keys=tuple(node.get("x-kubernetes-list-map-keys") or ()),
        map_type=node.get("x-kubernetes-map-type"),
    )
    _info_cache[id(node)] = (node, info)
    return info


def field_info_at(gvk: GVK, path: Sequence[str | int]) -> FieldInfo:
    return field_info(node_at(gvk, path))
