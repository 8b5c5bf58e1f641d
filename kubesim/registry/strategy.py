"""Registry strategies: what the server sets or keeps on create and update (metadata, generation, status),
plus the type-specific rules (pod create status, Lease MicroTime strictness)."""

from __future__ import annotations

import re
from typing import Any

from kubesim.resources.types import GEN_CREATE, GEN_NONE, GEN_SPEC_ANNOTATIONS, ResourceType
from kubesim.status import errors
from kubesim.storage.records import new_uid
from kubesim.storage.store import format_time

JSON = dict[str, Any]
_SYSTEM_FIELDS = (
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "selfLink",
)
# MicroTime accepts exactly Go's layout 2006-01-02T15:04:05.000000Z07:00
_MICRO_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}(Z|[+-]\d{2}:\d{2})$")
_MICRO_LAYOUT = "2006-01-02T15:04:05.000000Z07:00"


NAMESPACE_FINALIZER = "kubernetes"  # the namespace controller's token in spec.finalizers


def _is_namespace(rtype: ResourceType) -> bool:
    return rtype.plural == "namespaces" and not rtype.group


def reset_status_on_create(rtype: ResourceType, obj: JSON) -> None:
    if rtype.plural == "pods" and not rtype.group:
        obj["status"] = {"phase": "Pending"}  # qosClass: pod defaulting derives it from the defaulted spec
    elif _is_namespace(rtype):
        obj["status"] = {"phase": "Active"}
    elif rtype.status and rtype.plural != "nodes":
        obj.pop("status", None)


def _require_namespace_finalizer(obj: JSON) -> None:
    """Every new namespace waits for the namespace controller: `kubernetes` is appended to whatever
    spec.finalizers the request had."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        spec = obj["spec"] = {}
    finalizers = spec.get("finalizers")
    finalizers = list(finalizers) if isinstance(finalizers, list) else []
    if NAMESPACE_FINALIZER not in finalizers:
        finalizers.append(NAMESPACE_FINALIZER)
    spec["finalizers"] = finalizers


def prepare_create(rtype: ResourceType, obj: JSON, now: float) -> None:
    meta = obj["metadata"]
    for name in _SYSTEM_FIELDS:
        meta.pop(name, None)
    meta["creationTimestamp"] = format_time(now)
    meta["uid"] = new_uid()  # before defaulting, as the apiserver does: Job selectors use it
    if rtype.generation != GEN_NONE:
        meta["generation"] = 1
    reset_status_on_create(rtype, obj)
    if _is_namespace(rtype):
        _require_namespace_finalizer(obj)


def _spec_part(obj: JSON, status_separate: bool) -> JSON:
    return {
        k: v
        for k, v in obj.items()
        if k not in ("metadata", "apiVersion", "kind") and not (status_separate and k == "status")
    }


def prepare_update(rtype: ResourceType, new: JSON, old: JSON) -> None:
    """Main-resource PUT/PATCH: keep server-owned metadata and (with a status subresource) the status."""
    meta, old_meta = new.setdefault("metadata", {}), old["metadata"]
    if meta.get("uid") and meta["uid"] != old_meta.get("uid"):
        why = (
            f"Precondition failed: UID in precondition: {meta['uid']}, UID in object meta: "
            f"{old_meta.get('uid')}"
        )
        raise errors.conflict(rtype.plural, rtype.group, str(old_meta.get("name")), why)
    for name in _SYSTEM_FIELDS:
        if name in old_meta:
            meta[name] = old_meta[name]
        else:
            meta.pop(name, None)
    if rtype.status:
        if "status" in old:
            new["status"] = old["status"]
        else:
            new.pop("status", None)
    if _is_namespace(rtype):
        _keep_namespace_finalizers(new, old)  # only /finalize changes them
    if rtype.generation not in (GEN_NONE, GEN_CREATE):
        changed = _spec_part(new, rtype.status) != _spec_part(old, rtype.status)
        if rtype.generation == GEN_SPEC_ANNOTATIONS:
            changed |= (meta.get("annotations") or {}) != (old_meta.get("annotations") or {})
        if changed:
            meta["generation"] = int(old_meta.get("generation", 0)) + 1
    if old_meta.get("deletionTimestamp"):
        added = set(meta.get("finalizers") or []) - set(old_meta.get("finalizers") or [])
        if added:
            listed = ", ".join(sorted(added))
            raise errors.invalid_field(
                rtype.kind,
                rtype.group,
                str(old_meta.get("name")),
                "metadata.finalizers",
                "FieldValueForbidden",
                f"Forbidden: no new finalizers can be added if the object is being deleted, found new "
                f'finalizers []string{{"{listed}"}}',
            )


def _is_deployment(rtype: ResourceType) -> bool:
    return rtype.plural == "deployments" and rtype.group == "apps"


def prepare_status_update(rtype: ResourceType, new: JSON, old: JSON) -> JSON:
    """/status writes: everything but .status comes from the stored object.

    Deployments differ (pkg/registry/apps/deployment/strategy.go deploymentStatusStrategy.PrepareForUpdate):
    only spec and metadata.labels are reset, so annotations sent to /status persist; the deployment
    controller writes its revision annotation that way."""
    if _is_deployment(rtype):
        return _deployment_status_update(new, old)
    result = {k: v for k, v in old.items() if k != "status"}
    result["metadata"] = dict(old["metadata"])
    if new.get("metadata", {}).get("resourceVersion"):
        result["metadata"]["resourceVersion"] = new["metadata"]["resourceVersion"]
    if "managedFields" in new.get("metadata", {}):
        result["metadata"]["managedFields"] = new["metadata"]["managedFields"]
    if "status" in new:
        result["status"] = new["status"]  # a body without status clears it, as the status strategies do
    return result


def _deployment_status_update(new: JSON, old: JSON) -> JSON:
    result = {k: v for k, v in new.items() if k not in ("spec", "status")}
    if "spec" in old:
        result["spec"] = old["spec"]
    if "status" in new:
        result["status"] = new["status"]
    metadata = dict(new.get("metadata") or {})
    old_meta = old["metadata"]
    for name in (*_SYSTEM_FIELDS, "labels"):  # system fields: as every update keeps them
        if name in old_meta:
            metadata[name] = old_meta[name]
        else:
            metadata.pop(name, None)
    result["metadata"] = metadata
    return result


def prepare_finalize_update(new: JSON, old: JSON) -> JSON:
    """PUT /api/v1/namespaces/{name}/finalize: the stored namespace with the body's spec.finalizers (an
    absent list is an empty one, as a Go client omits it), nothing else."""
    result = {k: v for k, v in old.items() if k != "spec"}
    result["metadata"] = dict(old["metadata"])
    if new.get("metadata", {}).get("resourceVersion"):
        result["metadata"]["resourceVersion"] = new["metadata"]["resourceVersion"]
    if "managedFields" in new.get("metadata", {}):
        result["metadata"]["managedFields"] = new["metadata"]["managedFields"]
    spec = dict(old.get("spec") or {})
    finalizers = (new.get("spec") or {}).get("finalizers")
    if finalizers:
        spec["finalizers"] = finalizers
    else:
        spec.pop("finalizers", None)
    result["spec"] = spec
    return result


def _keep_namespace_finalizers(new: JSON, old: JSON) -> None:
    kept = (old.get("spec") or {}).get("finalizers")
    spec = new.get("spec")
    if not isinstance(spec, dict):
        spec = new["spec"] = {}
    if kept:
        spec["finalizers"] = kept
    else:
        spec.pop("finalizers", None)


def _micro_fields(rtype: ResourceType, obj: JSON) -> list[Any]:
    if rtype.plural == "leases" and rtype.group == "coordination.k8s.io":
        spec = obj.get("spec") or {}
        return [spec.get("acquireTime"), spec.get("renewTime")]
    if rtype.plural == "events" and rtype.group in ("", "events.k8s.io"):
        series = obj.get("series")
        observed = series.get("lastObservedTime") if isinstance(series, dict) else None
        return [obj.get("eventTime"), observed]
    return []


def check_micro_times(rtype: ResourceType, obj: JSON) -> None:
    """metav1.MicroTime fields (Lease acquire/renew, Event eventTime/series) need exactly six fractional
    digits: anything else fails decoding with 400, as Go's time layout does."""
    for value in _micro_fields(rtype, obj):
        if value is None:
            continue
        if not isinstance(value, str) or not _MICRO_TIME.match(value):
            raise errors.bad_request(
                f'{rtype.kind} in version "{rtype.version}" cannot be handled as a {rtype.kind}: '
                f'parsing time "{value}" as "{_MICRO_LAYOUT}": cannot parse "{_tail(value)}" as ".000000"'
            )


def _tail(value: Any) -> str:
    text = str(value)
    match = re.match(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}", text)
    return text[match.end() :] if match else text


def prune_paths(obj: JSON, paths: list[str]) -> None:
    """Drop unknown fields given as `.spec.foo` / `spec.containers[0].bar` paths."""
    for path in paths:
        parts = re.findall(r"[^.\[\]]+|\[\d+\]", path.lstrip("."))
        current: Any = obj
        for part in parts[:-1]:
            if part.startswith("[") and isinstance(current, list):
                index = int(part[1:-1])
                current = current[index] if index < len(current) else None
            elif isinstance(current, dict):
                current = current.get(part)
            else:
                current = None
            if current is None:
                break
        if isinstance(current, dict) and parts:
            current.pop(parts[-1], None)
