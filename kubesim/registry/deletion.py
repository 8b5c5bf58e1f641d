"""Deletion as the apiserver's generic registry does it (preconditions, finalizers and propagationPolicy,
pod graceful deletion, dry run), and the two that differ: a namespace is only marked (deletionTimestamp,
phase Terminating) and stays until its spec.finalizers and metadata.finalizers are both empty (emptying it
and clearing the `kubernetes` finalizer through /finalize is the namespace controller's job, as with
kube-apiserver); a CRD gets the `customresourcecleanup.apiextensions.k8s.io` finalizer and its custom
resources are deleted (the apiextensions server's own finalizer)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from kubesim.api.context import ApiContext
from kubesim.registry import crd, propagation
from kubesim.resources.types import ResourceType
from kubesim.status import errors
from kubesim.storage.records import copy_json, parse_time
from kubesim.storage.store import format_time

JSON = dict[str, Any]
log = logging.getLogger(__name__)
_POLL = 0.05
IMMORTAL = ("default", "kube-system", "kube-public")  # NamespaceLifecycle refuses to delete these


def _grace(rtype: ResourceType, obj: JSON, options: JSON) -> int:
    """Pods (the one graceful strategy): options or spec grace (default 30), but 0 when unscheduled or
    finished; a negative period means 1 s, as CheckGracefulDelete has it."""
    if rtype.plural != "pods" or rtype.group:
        return 0
    grace = options.get("gracePeriodSeconds")
    if grace is None:
        grace = (obj.get("spec") or {}).get("terminationGracePeriodSeconds", 30)
    if not (obj.get("spec") or {}).get("nodeName") or (obj.get("status") or {}).get("phase") in (
        "Succeeded",
        "Failed",
    ):
        return 0
    return 1 if int(grace) < 0 else int(grace)


def _check_preconditions(rtype: ResourceType, meta: JSON, options: JSON) -> None:
    """rest.BeforeDelete fails early on a precondition mismatch, naming the Kind (namespaces and CRDs have
    their own storage, with the "Precondition failed" wording)."""
    preconditions = options.get("preconditions") or {}
    uid, rv = preconditions.get("uid"), preconditions.get("resourceVersion")
    name = str(meta.get("name"))
    own_storage = rtype.plural in ("namespaces", "customresourcedefinitions")
    resource = rtype.plural if own_storage else rtype.kind
    if uid is not None and uid != meta.get("uid"):
        why = (
            f"Precondition failed: UID in precondition: {uid}, UID in object meta: {meta.get('uid')}"
            if own_storage
            else f"the UID in the precondition ({uid}) does not match the UID in record ({meta.get('uid')}). "
            "The object might have been deleted and then recreated"
        )
        raise errors.conflict(resource, rtype.group, name, why)
    if rv is not None and rv != meta.get("resourceVersion"):
        current = meta.get("resourceVersion")
        why = (
            f"Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: "
            f"{current}"
            if own_storage
            else f"the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in "
            f"record ({current}). The object might have been modified"
        )
        raise errors.conflict(resource, rtype.group, name, why)


def _pending_graceful(meta: JSON, options: JSON) -> bool:
    """A pod already in its grace period: only a shorter period changes it (moving the deletionTimestamp
    by the difference); anything else, finalizer changes included, leaves it as it is."""
    current = int(meta.get("deletionGracePeriodSeconds") or 0)
    if not meta.get("deletionTimestamp") or current == 0:
        return False
    requested = options.get("gracePeriodSeconds")
    if requested is None:
        return True
    requested = 1 if int(requested) < 0 else int(requested)
    if requested >= current:
        return True
    meta["deletionTimestamp"] = format_time(parse_time(meta["deletionTimestamp"]) - current + requested)
    meta["deletionGracePeriodSeconds"] = requested
    return False


def delete_one(
    ctx: ApiContext, rtype: ResourceType, namespace: str, name: str, options: JSON
) -> tuple[JSON, bool]:
    """Apply one delete; returns (object as it is now, whether it is gone)."""
    store = ctx.store
    entry = store.entry(rtype.key, namespace, name)
    if entry is None:
        raise errors.not_found(rtype.plural, rtype.group, name)
    obj = copy_json(entry.obj)
    meta = obj["metadata"]
    is_namespace = rtype.plural == "namespaces" and not rtype.group
    if is_namespace and name in IMMORTAL:  # admission, which runs before the storage's preconditions
        raise errors.forbidden("namespaces", "", name, "this namespace may not be deleted")
    _check_preconditions(rtype, meta, options)
    dry_run = "All" in (options.get("dryRun") or [])
    if is_namespace:
        return _begin_namespace_delete(ctx, obj, dry_run), False
    if rtype.plural == "customresourcedefinitions":
        return _begin_crd_delete(ctx, obj, dry_run), False
    if _pending_graceful(meta, options):
        return obj, False
    finalizers = propagation.gc_finalizers(rtype, list(meta.get("finalizers") or []), options)
    if finalizers:
        meta["finalizers"] = finalizers
    else:
        meta.pop("finalizers", None)
    now = ctx.clock()
    if meta.get("deletionTimestamp"):  # deleting already: never a new timestamp, at most an earlier one
        grace = int(meta.get("deletionGracePeriodSeconds") or 0)
        if grace == 0 and parse_time(meta["deletionTimestamp"]) > now:
            meta["deletionTimestamp"] = format_time(now)  # markAsDeleting
    else:
        grace = _grace(rtype, obj, options)
        if finalizers or grace > 0:
            meta["deletionTimestamp"] = format_time(now + grace)
            meta["deletionGracePeriodSeconds"] = grace
            if meta.get("generation", 0) > 0:
                meta["generation"] += 1
    if not finalizers and grace == 0:
        if dry_run:
            return obj, True
        # the request may have taken the last (GC) finalizers off: upstream then deletes the stored object
        return store.delete(rtype.key, namespace, name, honour_finalizers=False), True
    if dry_run:
        return obj, False
    result = store.update(rtype.key, obj, check_resource_version=False)
    return result, store.entry(rtype.key, namespace, name) is None


def _begin_namespace_delete(ctx: ApiContext, obj: JSON, dry_run: bool) -> JSON:
    """Mark only. The store removes the namespace on the write that leaves both finalizer lists empty (here
    already, when it had none)."""
    meta = obj["metadata"]
    if not meta.get("deletionTimestamp"):
        meta["deletionTimestamp"] = format_time(ctx.clock())
    obj.setdefault("status", {})["phase"] = "Terminating"
    if dry_run:
        return obj
    return ctx.store.update("namespaces", obj, check_resource_version=False)


def _begin_crd_delete(ctx: ApiContext, obj: JSON, dry_run: bool) -> JSON:
    meta = obj["metadata"]
    finalizers = list(meta.get("finalizers") or [])
    if crd.CLEANUP_FINALIZER not in finalizers and not meta.get("deletionTimestamp"):
        finalizers.append(crd.CLEANUP_FINALIZER)
    meta["finalizers"] = finalizers
    if not meta.get("deletionTimestamp"):
        meta["deletionTimestamp"] = format_time(ctx.clock())
        meta["deletionGracePeriodSeconds"] = 0
        meta["generation"] = int(meta.get("generation", 0)) + 1
        conditions = obj.setdefault("status", {}).get("conditions") or []
        conditions = [c for c in conditions if c.get("type") != "Terminating"]
        conditions.append(
            crd.condition(
                "Terminating",
                "True",
                "InstanceDeletionInProgress",
                "CustomResource deletion is in progress",
                format_time(ctx.clock()),
            )
        )
        obj["status"]["conditions"] = conditions
    if dry_run:
        return obj
    result = ctx.store.update(crd.CRD_KEY, obj, check_resource_version=False)
    task = asyncio.get_running_loop().create_task(_delete_custom_resources(ctx, str(meta["name"])))
    ctx.background.add(task)
    task.add_done_callback(ctx.background.discard)
    return result


async def _delete_custom_resources(ctx: ApiContext, name: str) -> None:
    entry = ctx.store.entry(crd.CRD_KEY, "", name)
    if entry is None:
        return
    rtypes = crd.types_for(entry.obj)
    if rtypes:
        rtype = rtypes[0]
        requested: set[tuple[str, str]] = set()
        while entries := ctx.store.entries(rtype.key):
            for item in entries:
                if (item.namespace, item.name) not in requested:
                    requested.add((item.namespace, item.name))
                    try:
                        delete_one(ctx, rtype, item.namespace, item.name, {})
                    except Exception:
                        log.exception("custom resource cleanup failed")
            await asyncio.sleep(_POLL)
    entry = ctx.store.entry(crd.CRD_KEY, "", name)
    if entry is None:
        return
    definition = copy_json(entry.obj)
    definition["metadata"]["finalizers"] = [
        f for f in definition["metadata"].get("finalizers") or [] if f != crd.CLEANUP_FINALIZER
    ]
    if not definition["metadata"]["finalizers"]:
        definition["metadata"].pop("finalizers")
    ctx.store.update(crd.CRD_KEY, definition, check_resource_version=False)
