"""Discovery: resources the manager has no constant for (custom resources), cached per client, and the whole
served tree with verbs (for controllers that act on every resource: the garbage collector, the namespace
controller)."""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
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


@dataclass(frozen=True, slots=True)
class ApiResource:
    """One resource as discovery lists it: where it is served and which verbs it supports."""

    gvr: GroupVersionResource
    verbs: frozenset[str]

    def supports(self, *verbs: str) -> bool:
        return self.verbs.issuperset(verbs)


@dataclass(frozen=True, slots=True)
class Discovery:
    """Every resource the server serves, each once, in its group's most preferred version that serves it
    (client-go's `ServerPreferredResources`), and the group versions that could not be read."""

    resources: tuple[ApiResource, ...]
    failed: Mapping[str, str] = field(default_factory=dict)  # "group/version" -> the error

    def with_verbs(self, *verbs: str) -> list[ApiResource]:
        return [r for r in self.resources if r.supports(*verbs)]


async def discover_resources(client: ApiClient) -> Discovery:
    """Read the whole discovery tree: `/api`, `/apis`, then every version of every group, concurrently.

    A group version that fails is recorded in `failed` and the rest are still returned (the garbage collector
    and the namespace controller keep working on what they can see)."""
    core, groups = await asyncio.gather(
        client.request_json("GET", "/api"), client.request_json("GET", "/apis")
    )
    versions: list[tuple[str, str]] = [("", v) for v in core.get("versions", [])]
    for group in groups.get("groups", []):
        preferred = (group.get("preferredVersion") or {}).get("version")
        ordered = [v.get("version", "") for v in group.get("versions", [])]
        if preferred in ordered:  # the preferred version first, then the server's order
            ordered.remove(preferred)
            ordered.insert(0, preferred)
        versions.extend((group.get("name", ""), v) for v in ordered if v)
    bodies = await asyncio.gather(
        *(client.request_json("GET", _group_version_path(g, v)) for g, v in versions), return_exceptions=True
    )
    found: dict[tuple[str, str], ApiResource] = {}
    failed: dict[str, str] = {}
    for (group, version), body in zip(versions, bodies, strict=True):
        if isinstance(body, BaseException):
            if not isinstance(body, Exception):
                raise body
            failed[f"{group}/{version}" if group else version] = str(body) or type(body).__name__
            continue
        for resource, verbs in _parse_with_verbs(group, version, body):
            found.setdefault((group, resource.resource), ApiResource(resource, verbs))
    return Discovery(tuple(found.values()), failed)


def _group_version_path(group: str, version: str) -> str:
    return f"/apis/{group}/{version}" if group else f"/api/{version}"


def _parse_with_verbs(
    group: str, version: str, body: dict[str, Any]
) -> list[tuple[GroupVersionResource, frozenset[str]]]:
    verbs = {entry.get("name"): frozenset(entry.get("verbs") or ()) for entry in body.get("resources", [])}
    return [(gvr, verbs.get(gvr.resource, frozenset())) for gvr in _parse_resource_list(group, version, body)]
