"""Group/version/resource addressing, the built-in resources the manager uses, and discovery for the rest.

Every request the client makes is addressed by a `GroupVersionResource`; nothing on the hot path knows about
typed models. Custom resources are found through the API server's discovery documents (`resolve`).
"""

from __future__ import annotations

import asyncio
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

if TYPE_CHECKING:
    from manager.client.rest import ApiClient


@dataclass(frozen=True, slots=True)
class GroupVersionResource:
    """One REST resource: `group` ("" = core), `version`, plural `resource`, `kind`, `namespaced`."""

    group: str
    version: str
    resource: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        """The `apiVersion` field of objects of this resource ("v1", "batch/v1")."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_version_path(self) -> str:
        """ "/api/v1" for the core group, "/apis/<group>/<version>" otherwise."""
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    def api_path(
        self, namespace: str | None = None, name: str | None = None, subresource: str | None = None
    ) -> str:
        """The URL path of the collection (name=None) or of one object, optionally of its subresource.

        A namespaced resource with namespace=None addresses all namespaces (list/watch only).
        """
        parts = [self.group_version_path]
        if self.namespaced and namespace:
            parts.append(f"namespaces/{quote(namespace, safe='')}")
        parts.append(self.resource)
        if name is not None:
            parts.append(quote(name, safe=""))
            if subresource:
                parts.append(subresource)
        elif subresource:
            raise ValueError("a subresource needs an object name")
        return "/".join(parts)

    def __str__(self) -> str:
        return (
            f"{self.resource}.{self.version}.{self.group}"
            if self.group
            else f"{self.resource}.{self.version}"
        )


PODS = GroupVersionResource("", "v1", "pods", "Pod")
EVENTS = GroupVersionResource("", "v1", "events", "Event")
NAMESPACES = GroupVersionResource("", "v1", "namespaces", "Namespace", namespaced=False)
NODES = GroupVersionResource("", "v1", "nodes", "Node", namespaced=False)
CONFIGMAPS = GroupVersionResource("", "v1", "configmaps", "ConfigMap")
JOBS = GroupVersionResource("batch", "v1", "jobs", "Job")
REPLICASETS = GroupVersionResource("apps", "v1", "replicasets", "ReplicaSet")
DEPLOYMENTS = GroupVersionResource("apps", "v1", "deployments", "Deployment")
LEASES = GroupVersionResource("coordination.k8s.io", "v1", "leases", "Lease")
CUSTOMRESOURCEDEFINITIONS = GroupVersionResource(
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", namespaced=False
)

BUILTIN: tuple[GroupVersionResource, ...] = (
    PODS,
    EVENTS,
    NAMESPACES,
    NODES,
    CONFIGMAPS,
    JOBS,
    REPLICASETS,
    DEPLOYMENTS,
    LEASES,
    CUSTOMRESOURCEDEFINITIONS,
)


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
        from manager.client.errors import NotFound

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
