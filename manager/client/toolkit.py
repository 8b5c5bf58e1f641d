"""Writes every operator makes: its status (to the status subresource) and its finalizers, each as a JSON
merge patch that can carry a resourceVersion precondition (the server answers 409 Conflict when the object
changed since it was read)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from manager.apimachinery.resources import GroupVersionResource

if TYPE_CHECKING:
    from manager.client.rest import ApiClient


def _where(obj: Mapping[str, Any]) -> tuple[str, str | None]:
    meta = obj.get("metadata") or {}
    return meta["name"], meta.get("namespace") or None


async def patch_status(
    client: ApiClient,
    gvr: GroupVersionResource,
    obj: Mapping[str, Any],
    status: Mapping[str, Any],
    *,
    resource_version: str | None = None,
    field_manager: str | None = None,
) -> dict[str, Any]:
    """Merge-patch `status` into `obj`'s status subresource and return the updated object.

    `status` is a JSON merge patch (RFC 7386): keys given replace, a None value deletes, lists are replaced
    whole (send the whole `conditions` list). With `resource_version` (usually `obj`'s) the patch fails with
    `Conflict` if the object changed meanwhile."""
    name, namespace = _where(obj)
    body: dict[str, Any] = {"status": dict(status)}
    if resource_version is not None:
        body["metadata"] = {"resourceVersion": resource_version}
    return await client.patch(
        gvr, name, body, namespace, patch_type="merge", field_manager=field_manager, subresource="status"
    )


async def patch_finalizers(
    client: ApiClient,
    gvr: GroupVersionResource,
    obj: Mapping[str, Any],
    finalizers: Sequence[str] | None = None,
    *,
    precondition: bool = True,
    field_manager: str | None = None,
) -> dict[str, Any]:
    """Send `obj`'s finalizers list (or `finalizers`) as a merge patch
    `{"metadata": {"finalizers": [...], "resourceVersion": rv}}`.

    Edit the object with `add_finalizer`/`remove_finalizer`, then call this when they say it changed. The
    resourceVersion precondition (on by default) makes a concurrent edit of the list a `Conflict` instead of
    a lost update."""
    meta = obj.get("metadata") or {}
    name, namespace = _where(obj)
    patch_meta: dict[str, Any] = {
        "finalizers": list((meta.get("finalizers") or ()) if finalizers is None else finalizers)
    }
    if precondition:
        rv = meta.get("resourceVersion")
        if not rv:
            raise ValueError("a resourceVersion precondition needs metadata.resourceVersion on the object")
        patch_meta["resourceVersion"] = rv
    return await client.patch(
        gvr, name, {"metadata": patch_meta}, namespace, patch_type="merge", field_manager=field_manager
    )
