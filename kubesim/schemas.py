"""Real Kubernetes OpenAPI schemas, indexed by group/version/kind (stub: filled in next commit)."""

from __future__ import annotations

from typing import Any

JSON = dict[str, Any]
GVK = tuple[str, str, str]

_crd_schemas: dict[GVK, JSON] = {}


def register_crd_schema(gvk: GVK, schema: JSON) -> None:
    """Register (or replace) the openAPIV3Schema of a custom resource version once its CRD is established."""
    _crd_schemas[gvk] = schema


def unregister_crd_schema(gvk: GVK) -> None:
    _crd_schemas.pop(gvk, None)


def is_builtin(gvk: GVK) -> bool:
    return gvk not in _crd_schemas


def schema_for(gvk: GVK) -> JSON | None:
    return _crd_schemas.get(gvk)
