"""The NamespaceLifecycle admission plugin's part for creates: no new object (subresource creates such as
pods/binding and pods/eviction included, events too) in a namespace that is missing (404) or Terminating
(403 with the NamespaceTerminating cause that clients, `kubectl drain` for one, look for)."""

from __future__ import annotations

from typing import Any

from kubesim.api.context import ApiContext
from kubesim.status import errors

JSON = dict[str, Any]
NAMESPACE_TERMINATING = "NamespaceTerminating"  # v1.NamespaceTerminatingCause


def admission_name(obj: JSON) -> str:
    """The name admission errors use: it runs before name generation, so a generateName prefix stands for
    the name, and "Unknown" when there is neither."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return "Unknown"
    return str(meta.get("name") or meta.get("generateName") or "Unknown")


def terminating(namespace: JSON) -> bool:
    # kubesim marks both at once; the plugin reads the phase
    return bool(
        namespace.get("metadata", {}).get("deletionTimestamp")
        or (namespace.get("status") or {}).get("phase") == "Terminating"
    )


def check_create(ctx: ApiContext, resource: str, group: str, namespace: str, name: str) -> None:
    entry = ctx.namespace_entry(namespace)
    if entry is None:
        raise errors.not_found("namespaces", "", namespace)
    if not terminating(entry.obj):
        return
    err = errors.forbidden(
        resource,
        group,
        name,
        f"unable to create new content in namespace {namespace} because it is being terminated",
    )
    assert err.details is not None
    err.details["causes"] = [
        {
            "reason": NAMESPACE_TERMINATING,
            "message": f"namespace {namespace} is being terminated",
            "field": "metadata.namespace",
        }
    ]
    raise err
