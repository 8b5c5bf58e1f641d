"""The representation an `Accept: application/json;as=...` asks for, applied to a verb's result as the
apiserver's transformResponseObject does: PartialObjectMetadata for one object, PartialObjectMetadataList
for a list, Table for either. Like upstream it runs after the verb, so asking a list kind of one object (or
the reverse) answers 406 even when a write already happened; a Status is never transformed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesim.api import table
from kubesim.api.context import to_view
from kubesim.api.request import Accept
from kubesim.resources.types import ResourceType
from kubesim.status import errors

JSON = dict[str, Any]
PARTIAL, PARTIAL_LIST = "PartialObjectMetadata", "PartialObjectMetadataList"


def _go_type(rtype: ResourceType, is_list: bool) -> str:
    """The internal Go type upstream names in its 406 message (%T)."""
    if rtype.crd is not None:
        return "*unstructured.UnstructuredList" if is_list else "*unstructured.Unstructured"
    package = "core" if rtype.group in ("", "events.k8s.io") else rtype.group.split(".")[0]
    return f"*{package}.{rtype.kind}{'List' if is_list else ''}"


def _not_acceptable(message: str) -> errors.ApiError:
    return errors.ApiError(406, "NotAcceptable", message)


def one(accept: Accept, rtype: ResourceType, obj: JSON, query: Mapping[str, str]) -> JSON | None:
    """One object as asked; None means the plain object."""
    if accept.as_kind == PARTIAL:
        return table.partial(obj)
    if accept.as_kind == PARTIAL_LIST:
        raise _not_acceptable(
            "you requested PartialObjectMetadataList, but the requested object is not a list "
            f"({_go_type(rtype, False)})"
        )
    if accept.as_kind == "Table":
        rv = str(obj.get("metadata", {}).get("resourceVersion", ""))
        return table.to_table(rtype, [to_view(rtype, obj)], rv, None, True, table.include_object(query))
    return None


def many(
    accept: Accept, rtype: ResourceType, list_meta: JSON, objs: list[JSON], query: Mapping[str, str]
) -> JSON | None:
    """A list as asked (`list_meta`: resourceVersion, continue, remainingItemCount); None means plain."""
    if accept.as_kind == PARTIAL_LIST:
        items = [table.partial(obj) for obj in objs]
        return {"kind": PARTIAL_LIST, "apiVersion": "meta.k8s.io/v1", "metadata": list_meta, "items": items}
    if accept.as_kind == PARTIAL:
        raise _not_acceptable(
            "you requested PartialObjectMetadata, but the requested object is a list "
            f"({_go_type(rtype, True)})"
        )
    if accept.as_kind == "Table":
        rv, token = str(list_meta.get("resourceVersion", "")), list_meta.get("continue")
        views = [to_view(rtype, obj) for obj in objs]
        body = table.to_table(rtype, views, rv, token, True, table.include_object(query))
        if "remainingItemCount" in list_meta:
            body["metadata"]["remainingItemCount"] = list_meta["remainingItemCount"]
        return body
    return None
