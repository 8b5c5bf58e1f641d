"""Namespace deletion: mark Terminating, delete the contents (as the namespace controller does), then remove
the namespace once nothing is left in it."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from kubesim import errors
from kubesim.admission import copy_json
from kubesim.context import ApiContext
from kubesim.store import format_time

JSON = dict[str, Any]
log = logging.getLogger(__name__)
_POLL = 0.05
IMMORTAL = ("default", "kube-system", "kube-public")  # NamespaceLifecycle refuses to delete these


def begin_delete(ctx: ApiContext, obj: JSON, dry_run: bool) -> JSON:
    meta = obj["metadata"]
    if not meta.get("deletionTimestamp"):
        meta["deletionTimestamp"] = format_time(ctx.clock())
    obj.setdefault("status", {})["phase"] = "Terminating"
    if dry_run:
        return obj
    result = ctx.store.update("namespaces", obj, check_resource_version=False)
    if ctx.store.entry("namespaces", "", str(meta["name"])) is not None:
        task = asyncio.get_running_loop().create_task(_finish(ctx, str(meta["name"])))
        ctx.background.add(task)
        task.add_done_callback(ctx.background.discard)
    return result


def _namespaced_keys(ctx: ApiContext) -> list[tuple[Any, str]]:
    seen: dict[str, Any] = {}
    for rtype in ctx.registry:
        if rtype.namespaced and rtype.store_group is None:
            seen.setdefault(rtype.key, rtype)
    return [(rtype, key) for key, rtype in seen.items()]


async def _finish(ctx: ApiContext, name: str) -> None:
    from kubesim.handlers_delete import delete_one

    requested: set[tuple[str, str]] = set()
    while True:
        remaining = 0
        for rtype, key in _namespaced_keys(ctx):
            for entry in ctx.store.entries(key, name):
                remaining += 1
                marker = (key, entry.name)
                if marker in requested and entry.obj["metadata"].get("deletionTimestamp"):
                    continue
                requested.add(marker)
                try:
                    delete_one(ctx, rtype, name, entry.name, {"propagationPolicy": "Background"})
                except errors.ApiError:
                    pass
                except Exception:
                    log.exception("namespace cleanup failed for %s/%s", key, entry.name)
        if remaining == 0:
            break
        await asyncio.sleep(_POLL)
    ns_entry = ctx.store.entry("namespaces", "", name)
    if ns_entry is None or not ns_entry.obj["metadata"].get("deletionTimestamp"):
        return
    obj = copy_json(ns_entry.obj)
    obj.setdefault("spec", {}).pop("finalizers", None)
    if obj["metadata"].get("finalizers"):
        ctx.store.update("namespaces", obj, check_resource_version=False)
        return  # someone else's finalizer: the store removes the namespace once it is released
    ctx.store.delete("namespaces", "", name)
