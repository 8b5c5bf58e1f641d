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
from kubesim.registry import crd
from kubesim.resources.types import ResourceType
from kubesim.status import errors
from kubesim.storage.records import copy_json
from kubesim.storage.store import format_time

JSON = dict[str, Any]
log = logging.getLogger(__name__)
_POLL = 0.05
FOREGROUND, ORPHAN = "foregroundDeletion", "orphan"
IMMORTAL = ("default", "kube-system", "kube-public")  # NamespaceLifecycle refuses to delete these


def _policy(rtype: ResourceType, options: JSON) -> str | None:
    policy = options.get("propagationPolicy")
    if policy is None and options.get("orphanDependents") is not None:
        policy = "Orphan" if options["orphanDependents"] else "Background"
    if policy is None and rtype.group == "batch" and rtype.plural == "jobs":
        policy = "Orphan"  # batch/v1 Jobs default to orphaning their pods
    return policy


def _grace(rtype: ResourceType, obj: JSON, options: JSON) -> int:
    """Pods: options or spec grace (default 30), but 0 when unscheduled or finished."""
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
    return max(0, int(grace))


def delete_one(
    ctx: ApiContext, rtype: ResourceType, namespace: str, name: str, options: JSON
) -> tuple[JSON, bool]:
    """Apply one delete; returns (object as it is now, whether it is gone)."""
    store = ctx.store
    entry = store.entry(rtype.key, namespace, name)
    if entry is None:
        raise errors.not_found(rtype.plural, rtype.group, name)
    preconditions = options.get("preconditions") or {}
    obj = copy_json(entry.obj)
    meta = obj["metadata"]
    uid, rv = preconditions.get("uid"), preconditions.get("resourceVersion")
    if uid is not None and uid != meta.get("uid"):
        raise errors.conflict(
            rtype.plural,
            rtype.group,
            name,
            f"Precondition failed: UID in precondition: {uid}, UID in object meta: {meta.get('uid')}",
        )
    if rv is not None and rv != meta.get("resourceVersion"):
        raise errors.conflict(
            rtype.plural,
            rtype.group,
            name,
            "Precondition failed: ResourceVersion in "
            f"precondition: {rv}, ResourceVersion in object meta: {meta.get('resourceVersion')}",
        )
    dry_run = "All" in (options.get("dryRun") or [])
    if rtype.plural == "namespaces" and not rtype.group:
        if name in IMMORTAL:
            raise errors.forbidden("namespaces", "", name, "this namespace may not be deleted")
        return _begin_namespace_delete(ctx, obj, dry_run), False
    if rtype.plural == "customresourcedefinitions":
        return _begin_crd_delete(ctx, obj, dry_run), False
    finalizers = list(meta.get("finalizers") or [])
    policy = _policy(rtype, options)
    if policy is not None:
        finalizers = [f for f in finalizers if f not in (FOREGROUND, ORPHAN)]
        if policy == "Foreground":
            finalizers.append(FOREGROUND)
        elif policy == "Orphan":
            finalizers.append(ORPHAN)
    grace = _grace(rtype, obj, options)
    now = ctx.clock()
    if finalizers or grace > 0:
        if finalizers:
            meta["finalizers"] = finalizers
        else:
            meta.pop("finalizers", None)
        if not meta.get("deletionTimestamp"):
            meta["deletionTimestamp"] = format_time(now + grace)
            if meta.get("generation", 0) > 0:
                meta["generation"] += 1
            meta["deletionGracePeriodSeconds"] = grace
        elif grace < int(meta.get("deletionGracePeriodSeconds") or 0):
            meta["deletionTimestamp"] = format_time(now + grace)  # a shorter grace period wins
            meta["deletionGracePeriodSeconds"] = grace
        if dry_run:
            return obj, False
        result = store.update(rtype.key, obj, check_resource_version=False)
        return result, store.entry(rtype.key, namespace, name) is None
    if dry_run:
        return obj, True
    return store.delete(rtype.key, namespace, name), True


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
