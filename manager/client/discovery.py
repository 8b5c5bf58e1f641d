"""Discovery of resources the manager has no constant for (custom resources), cached per client."""

from __future__ import annotations

import asyncio
import weakref
from typing import TYPE_CHECKING, Any

from manager.apimachinery.resources import BUILTIN, GroupVersionResource
from manager.client.errors import NotFound

if TYPE_CHECKING:
    from manager.client.rest import ApiClient


class ResourceNotFound(LookupError):
    """Discovery does not list the requested resource or kind."""


# Per client: (group, version) -> resources of that group version from the last discovery call.
_discovery_cache: weakref.WeakKeyDictionary[ApiClient, dict[tuple[str, str], list[GroupVersionResource]]] = (
    weakref.WeakKeyDictionary()
)
_discovery_locks: weakref.WeakKeyDictionary[ApiClient, asyncio.Lock] = weakref.WeakKeyDictionary()


def _match(resources: list[GroupVersionResource], resource_or_kind: str) -> GroupVersionResource | None:
    lowered = resource_or_kind.lower()
    for gvr in resources:
        if gvr.resource == resource_or_kind or gvr.kind == resource_or_kind:
            return gvr
    for gvr in resources:  # kubectl-style leniency: "Job" / "job" / "jobs"
        if gvr.kind.lower() == lowered or gvr.resource == lowered:
            return gvr
    return None


def _parse_resource_list(group: str, version: str, body: dict[str, Any]) -> list[GroupVersionResource]:
    found = []
    for entry in body.get("resources", []):
        name = entry.get("name", "")
        if not name or "/" in name:  # subresources such as "jobs/status"
            continue
        found.append(
            GroupVersionResource(group, version, name, entry.get("kind", ""), bool(entry.get("namespaced")))
        )
    return found


async def resolve(client: ApiClient, group: str, version: str, resource_or_kind: str) -> GroupVersionResource:
    """Find a resource by plural name or kind through discovery (cached per client, refreshed on a miss).

    Built-in constants are answered without a request. Raises `ResourceNotFound` when not served.
    """
    for gvr in BUILTIN:
        if gvr.group == group and gvr.version == version and resource_or_kind in (gvr.resource, gvr.kind):
            return gvr
    cache = _discovery_cache.setdefault(client, {})
    cached = cache.get((group, version))
    if cached is not None and (hit := _match(cached, resource_or_kind)) is not None:
        return hit
    lock = _discovery_locks.setdefault(client, asyncio.Lock())
    async with lock:
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        try:
            body = await client.request_json("GET", path)
        except NotFound:
            raise ResourceNotFound(f"{group}/{version} is not served") from None
        cache[(group, version)] = _parse_resource_list(group, version, body)
    hit = _match(cache[(group, version)], resource_or_kind)
    if hit is None:
        raise ResourceNotFound(f"{resource_or_kind} not found in {group or 'core'}/{version}")
    return hit


def invalidate_discovery(client: ApiClient) -> None:
    """Forget cached discovery documents of `client` (e.g. after a CRD was installed or removed)."""
    _discovery_cache.pop(client, None)
