"""Discovery: legacy (/api, /apis, /api/v1, /apis/<g>[/<v>]) and aggregated v2 (only when asked for)."""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web

from kubesim.resources.catalog import Registry
from kubesim.resources.types import SUB_VERBS, ResourceType
from kubesim.status import errors

JSON = dict[str, Any]
AGGREGATED_CT = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


def wants_aggregated(accept: str | None) -> bool:
    for clause in (accept or "").split(","):
        fields = [f.strip() for f in clause.split(";")]
        params = dict(f.split("=", 1) for f in fields[1:] if "=" in f)
        if (
            fields[0] == "application/json"
            and params.get("g") == "apidiscovery.k8s.io"
            and params.get("v") == "v2"
            and params.get("as") == "APIGroupDiscoveryList"
        ):
            return True
    return False


def _add_names(entry: JSON, rtype: ResourceType) -> None:
    """shortNames and categories, present only when the type has some (both discovery formats)."""
    if rtype.short_names:
        entry["shortNames"] = list(rtype.short_names)
    if rtype.categories:
        entry["categories"] = list(rtype.categories)


def _subresources(rtype: ResourceType) -> list[tuple[str, tuple[str, ...], tuple[str, str, str] | None]]:
    subs: list[tuple[str, tuple[str, ...], tuple[str, str, str] | None]] = []
    if rtype.plural == "namespaces" and not rtype.group:
        subs.append(("finalize", ("update",), None))
    if rtype.plural == "pods" and not rtype.group:
        subs.append(("binding", ("create",), ("", "v1", "Binding")))
        subs.append(("eviction", ("create",), ("policy", "v1", "Eviction")))
        subs.append(("log", ("get",), ("", "v1", "Pod")))
    if rtype.plural == "serviceaccounts" and not rtype.group:
        subs.append(("token", ("create",), ("authentication.k8s.io", "v1", "TokenRequest")))
    if rtype.status:
        subs.append(("status", SUB_VERBS, None))
    if rtype.scale is not None:
        subs.append(("scale", SUB_VERBS, ("autoscaling", "v1", "Scale")))
    return subs


def resource_list(registry: Registry, group: str, version: str) -> JSON:
    resources: list[JSON] = []
    for rtype in sorted(registry.resources(group, version), key=lambda t: t.plural):
        entry: JSON = {
            "name": rtype.plural,
            "singularName": rtype.singular_name,
            "namespaced": rtype.namespaced,
            "kind": rtype.kind,
            "verbs": list(rtype.verbs),
        }
        _add_names(entry, rtype)
        resources.append(entry)
        for sub, verbs, response_kind in _subresources(rtype):
            sub_entry: JSON = {
                "name": f"{rtype.plural}/{sub}",
                "singularName": "",
                "namespaced": rtype.namespaced,
            }
            if response_kind is not None and response_kind[0]:
                sub_entry["group"], sub_entry["version"] = response_kind[0], response_kind[1]
            sub_entry["kind"] = response_kind[2] if response_kind else rtype.kind
            sub_entry["verbs"] = list(verbs)
            resources.append(sub_entry)
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": resources,
    }


def _group(registry: Registry, group: str) -> JSON:
    versions = [{"groupVersion": f"{group}/{v}", "version": v} for v in registry.versions(group)]
    return {"name": group, "versions": versions, "preferredVersion": dict(versions[0])}


def group_list(registry: Registry) -> JSON:
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [_group(registry, g) for g in registry.groups() if g],
    }


def _aggregated_group(registry: Registry, group: str) -> JSON:
    versions = []
    for version in registry.versions(group):
        resources = []
        for rtype in sorted(registry.resources(group, version), key=lambda t: t.plural):
            item: JSON = {
                "resource": rtype.plural,
                "responseKind": {"group": group, "version": version, "kind": rtype.kind},
                "scope": "Namespaced" if rtype.namespaced else "Cluster",
                "singularResource": rtype.singular_name,
                "verbs": list(rtype.verbs),
            }
            _add_names(item, rtype)
            subs = []
            for sub, verbs, response_kind in _subresources(rtype):
                g, v, k = response_kind or (group, version, rtype.kind)
                subs.append(
                    {
                        "subresource": sub,
                        "responseKind": {"group": g, "version": v, "kind": k},
                        "verbs": list(verbs),
                    }
                )
            if subs:
                item["subresources"] = subs
            resources.append(item)
        versions.append({"version": version, "resources": resources, "freshness": "Current"})
    return {"metadata": {"name": group}, "versions": versions}


def aggregated(registry: Registry, core: bool) -> JSON:
    groups = [""] if core else [g for g in registry.groups() if g]
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": [_aggregated_group(registry, g) for g in groups],
    }


def _json(body: JSON, content_type: str = "application/json") -> web.Response:
    response = web.Response(body=orjson.dumps(body))
    response.headers["Content-Type"] = content_type
    return response


def handle(registry: Registry, request: web.Request) -> web.Response | None:
    """Answer a discovery path, or None when the path is not discovery."""
    parts = [p for p in request.path.split("/") if p]
    accept = request.headers.get("Accept")
    if parts == ["api"]:
        if wants_aggregated(accept):
            return _json(aggregated(registry, core=True), AGGREGATED_CT)
        host = request.host or "127.0.0.1"
        return _json(
            {
                "kind": "APIVersions",
                "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": host}],
            }
        )
    if parts == ["apis"]:
        if wants_aggregated(accept):
            return _json(aggregated(registry, core=False), AGGREGATED_CT)
        return _json(group_list(registry))
    if parts == ["api", "v1"]:
        return _json(resource_list(registry, "", "v1"))
    if len(parts) == 2 and parts[0] == "apis":
        if not parts[1] or parts[1] not in registry.groups():
            raise errors.resource_not_found()
        return _json({"kind": "APIGroup", "apiVersion": "v1", **_group(registry, parts[1])})
    if len(parts) == 3 and parts[0] == "apis":
        if not registry.has_group_version(parts[1], parts[2]):
            raise errors.resource_not_found()
        return _json(resource_list(registry, parts[1], parts[2]))
    return None
