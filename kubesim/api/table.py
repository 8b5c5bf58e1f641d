"""Table (kubectl get) and PartialObjectMetadata representations."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesim.resources.printers import columns_for, human_duration
from kubesim.resources.types import ResourceType
from kubesim.status import errors

JSON = dict[str, Any]
__all__ = ["columns_for", "human_duration", "partial", "to_table"]

NAME_DESC = (
    "Name must be unique within a namespace. Is required when creating resources, although some "
    "resources may allow a client to request the generation of an appropriate name automatically."
)


def partial(obj: JSON) -> JSON:
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata", {}),
    }


def include_object(query: Mapping[str, str]) -> str:
    """The `includeObject` parameter: None, Object, or Metadata (the default)."""
    value = query.get("includeObject", "Metadata")
    if value not in ("None", "Object", "Metadata"):
        raise errors.bad_request(
            f'includeObject: Unsupported value: "{value}": supported values: "Metadata", "None", "Object"'
        )
    return value


def _row_object(obj: JSON, include: str) -> JSON | None:
    if include == "None":
        return None
    return obj if include == "Object" else partial(obj)


def to_table(
    rtype: ResourceType,
    objs: list[JSON],
    rv: str,
    token: str | None,
    headers: bool,
    include: str = "Metadata",
) -> JSON:
    columns = columns_for(rtype)
    meta: JSON = {"resourceVersion": rv}
    if token:
        meta["continue"] = token
    body: JSON = {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta}
    if headers:
        body["columnDefinitions"] = [
            {
                "name": name,
                "type": ctype,
                "format": fmt,
                "description": NAME_DESC if fmt == "name" else name,
                "priority": priority,
            }
            for name, ctype, fmt, priority, _ in columns
        ]
    else:
        body["columnDefinitions"] = None
    body["rows"] = [
        {"cells": [cell(obj) for *_, cell in columns], "object": _row_object(obj, include)} for obj in objs
    ]
    return body
