"""CustomResourceDefinitions: the resource types a CRD defines, establishing it (status, discovery,
endpoints), and forgetting them once it is gone (its deletion is kubesim.registry.deletion's)."""

from __future__ import annotations

import logging
from typing import Any

from kubesim.api.context import ApiContext
from kubesim.resources.types import GEN_SPEC, ResourceType, ScaleSpec
from kubesim.schema import schemas
from kubesim.storage.records import copy_json
from kubesim.storage.store import format_time

JSON = dict[str, Any]
CRD_KEY = "customresourcedefinitions.apiextensions.k8s.io"
CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
log = logging.getLogger(__name__)
_POLL = 0.05


def condition(kind: str, status: str, reason: str, message: str, now: str) -> JSON:
    return {"type": kind, "status": status, "lastTransitionTime": now, "reason": reason, "message": message}


def types_for(crd: JSON) -> list[ResourceType]:
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    group = str(spec.get("group", ""))
    result = []
    for version in spec.get("versions") or []:
        if not version.get("served", True):
            continue
        subresources = version.get("subresources") or spec.get("subresources") or {}
        scale_def = subresources.get("scale")
        scale = None
        if isinstance(scale_def, dict):
            scale = ScaleSpec(
                spec_replicas=scale_def.get("specReplicasPath", ".spec.replicas"),
                status_replicas=scale_def.get("statusReplicasPath", ".status.replicas"),
                label_selector=scale_def.get("labelSelectorPath"),
            )
        selectable = tuple(
            (str(f["jsonPath"]).lstrip("."), str(f["jsonPath"]).lstrip("."))
            for f in version.get("selectableFields") or []
            if f.get("jsonPath")
        )
        result.append(
            ResourceType(
                group=group,
                version=str(version.get("name")),
                plural=str(names.get("plural")),
                kind=str(names.get("kind")),
                namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                singular=str(names.get("singular") or str(names.get("kind", "")).lower()),
                short_names=tuple(names.get("shortNames") or ()),
                categories=tuple(names.get("categories") or ()),
                status="status" in subresources,
                scale=scale,
                generation=GEN_SPEC,
                field_selectors=selectable,
                crd=crd,
            )
        )
    return result


def _register(ctx: ApiContext, crd: JSON) -> None:
    spec = crd.get("spec") or {}
    group, plural = str(spec.get("group", "")), str((spec.get("names") or {}).get("plural", ""))
    ctx.registry.remove_group_resource(group, plural)
    for rtype in types_for(crd):
        ctx.registry.add(rtype)
        version = next(v for v in spec["versions"] if v.get("name") == rtype.version)
        schema = (version.get("schema") or spec.get("validation") or {}).get("openAPIV3Schema")
        if schema is not None:
            schemas.register_crd_schema((rtype.group, rtype.version, rtype.kind), schema)


def reconcile(ctx: ApiContext, name: str) -> None:
    """After a CRD write: accept its names, mark it Established, serve its versions."""
    entry = ctx.store.entry(CRD_KEY, "", name)
    if entry is None or entry.obj["metadata"].get("deletionTimestamp"):
        return
    crd = copy_json(entry.obj)
    spec = crd.get("spec") or {}
    names = dict(spec.get("names") or {})
    names.setdefault("singular", str(names.get("kind", "")).lower())
    names.setdefault("listKind", f"{names.get('kind', '')}List")
    status = crd.setdefault("status", {})
    now = format_time(ctx.clock())
    old_conditions = {c.get("type"): c for c in status.get("conditions") or []}
    conditions = []
    for kind, reason, message in (
        ("NamesAccepted", "NoConflicts", "no conflicts found"),
        ("Established", "InitialNamesAccepted", "the initial names have been accepted"),
    ):
        previous = old_conditions.get(kind)
        conditions.append(
            previous
            if previous and previous.get("status") == "True"
            else condition(kind, "True", reason, message, now)
        )
    status["conditions"] = conditions
    status["acceptedNames"] = names
    stored = list(status.get("storedVersions") or [])
    for version in spec.get("versions") or []:
        if version.get("storage") and version.get("name") not in stored:
            stored.append(version["name"])
    status["storedVersions"] = stored
    _register(ctx, crd)
    if crd != entry.obj:
        ctx.store.update(CRD_KEY, crd, check_resource_version=False)


def restore(ctx: ApiContext) -> None:
    """Serve every stored CRD (used at start-up)."""
    for entry in ctx.store.entries(CRD_KEY):
        _register(ctx, entry.obj)


def forget(ctx: ApiContext, crd: JSON) -> None:
    spec = crd.get("spec") or {}
    for rtype in types_for(crd):
        schemas.unregister_crd_schema((rtype.group, rtype.version, rtype.kind))
        ctx.store.drop_resource(rtype.key)
    ctx.registry.remove_group_resource(
        str(spec.get("group", "")), str((spec.get("names") or {}).get("plural"))
    )


def follow(ctx: ApiContext) -> None:
    """Stop serving a CRD's resources once the CRD object is gone, however it went."""

    def on_event(event: Any) -> None:
        if event.type == "DELETED":
            forget(ctx, event.obj)

    ctx.store.subscribe(CRD_KEY, on_event)
