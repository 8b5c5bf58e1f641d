"""The garbage collector's API calls (upstream: operations.go `getObject`, `deleteObject`, `patchObject`,
`removeFinalizer`; patch.go `patch`, `deleteOwnerRefJSONMergePatch`, `unblockOwnerReferences*`;
controller_utils.go `GenerateDeleteOwnerRefStrategicMergeBytes`).

Reads are live metadata-only GETs: the graph may lag, and a deletion decision must rest on the server's
current state. Writes carry preconditions (uid, resourceVersion) so a stale decision fails instead of
deleting or patching the wrong thing.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal

import structlog

from controllers.garbagecollector.graph import Node, ObjectReference, OwnerRef, is_blocking, owner_refs
from controllers.garbagecollector.monitors import Monitors
from controllers.garbagecollector.resources import RestMapper
from manager import ApiClient, ApiError, Conflict, GroupVersionResource, NotFound

log = structlog.get_logger(__name__)

Policy = Literal["Foreground", "Background", "Orphan"]
Obj = dict[str, Any]
# client-go retry.DefaultBackoff, which RetryOnConflict uses: 4 steps from 10 ms, factor 5, jitter 0.1.
CONFLICT_RETRIES, CONFLICT_BASE, CONFLICT_FACTOR, CONFLICT_JITTER = 4, 0.010, 5.0, 0.1
UNSUPPORTED_MEDIA_TYPE = 415


def delete_owner_refs_strategic_patch(dependent_uid: str, owner_uids: Sequence[str]) -> Obj:
    """Remove the references to `owner_uids`; the dependent's own uid makes it a precondition."""
    return {
        "metadata": {
            "ownerReferences": [{"$patch": "delete", "uid": uid} for uid in owner_uids],
            "uid": dependent_uid,
        }
    }


def unblock_owner_refs_strategic_patch(node: Node) -> Obj:
    """Set blockOwnerDeletion=false on the node's blocking references (merged by uid)."""
    refs = [{**ref, "blockOwnerDeletion": False} for ref in node.owners if is_blocking(ref)]
    return {"metadata": {"ownerReferences": refs, "uid": node.uid}}


def _namespace(gvr: GroupVersionResource, namespace: str) -> str | None:
    return namespace if gvr.namespaced else None  # upstream resourceDefaultNamespace


class Operations:
    def __init__(self, client: ApiClient, mapper: RestMapper, monitors: Monitors) -> None:
        self.client = client
        self.mapper = mapper
        self.monitors = monitors

    def resource(self, identity: Node | ObjectReference) -> GroupVersionResource:
        return self.mapper.resource_for(identity.api_version, identity.kind)

    async def get_object(self, item: Node) -> Obj:
        """The live object's metadata (raises NotFound, RestMappingError)."""
        gvr = self.resource(item)
        return await self.client.get(gvr, item.name, _namespace(gvr, item.namespace), metadata_only=True)

    async def get_metadata(self, item: Node) -> Mapping[str, Any]:
        """The object's metadata from its monitor's cache, or live when not cached (upstream
        `getMetadata`): only what a JSON merge patch needs (resourceVersion, ownerReferences)."""
        gvr = self.resource(item)
        namespace = _namespace(gvr, item.namespace)
        cached = self.monitors.cached(gvr, f"{namespace}/{item.name}" if namespace else item.name)
        obj = (
            cached
            if cached is not None
            else await self.client.get(gvr, item.name, namespace, metadata_only=True)
        )
        meta: Mapping[str, Any] = obj.get("metadata") or {}
        return meta

    async def patch(self, item: Node, strategic: Obj, merge: Callable[[Node], Awaitable[Obj]]) -> Obj:
        """A strategic merge patch, or the JSON merge patch `merge` builds when the resource does not take
        strategic ones (415: custom resources)."""
        gvr = self.resource(item)
        namespace = _namespace(gvr, item.namespace)
        try:
            return await self.client.patch(gvr, item.name, strategic, namespace, patch_type="strategic")
        except ApiError as exc:
            if exc.status != UNSUPPORTED_MEDIA_TYPE:
                raise
        return await self.client.patch(gvr, item.name, await merge(item), namespace, patch_type="merge")

    async def delete_owner_refs_merge_patch(self, item: Node, owner_uids: Sequence[str]) -> Obj:
        """The whole remaining ownerReferences list, with the cached resourceVersion as precondition."""
        meta = await self.get_metadata(item)
        remaining = [ref for ref in owner_refs(meta) if ref["uid"] not in owner_uids]
        return {
            "metadata": {"resourceVersion": meta.get("resourceVersion"), "ownerReferences": remaining or None}
        }

    async def unblock_owner_refs_merge_patch(self, item: Node) -> Obj:
        meta = await self.get_metadata(item)
        refs = [{**ref, "blockOwnerDeletion": False} for ref in item.owners]
        return {"metadata": {"resourceVersion": meta.get("resourceVersion"), "ownerReferences": refs or None}}

    async def delete_object(
        self, item: Node, resource_version: str, owners_at_version: Sequence[OwnerRef], policy: Policy
    ) -> None:
        """DELETE with preconditions {uid, resourceVersion}. On a conflict where only the resourceVersion
        moved (same uid, same ownerReferences) the decision still holds: retry with the uid alone."""
        gvr = self.resource(item)
        namespace = _namespace(gvr, item.namespace)
        preconditions = {"uid": item.uid}
        if resource_version:
            preconditions["resourceVersion"] = resource_version
        try:
            await self.client.delete(
                gvr, item.name, namespace, propagation_policy=policy, preconditions=preconditions
            )
            return
        except Conflict:
            if not resource_version:
                raise
            live = await self.client.get(gvr, item.name, namespace, metadata_only=True)  # NotFound: gone
            meta = live.get("metadata") or {}
            unchanged = (
                meta.get("uid") == item.uid
                and meta.get("resourceVersion") != resource_version
                and list(owner_refs(meta)) == list(owners_at_version)
            )
            if not unchanged:
                raise
        log.debug(
            "object changed but not its owners; deleting with the uid precondition only", item=str(item)
        )
        await self.client.delete(
            gvr, item.name, namespace, propagation_policy=policy, preconditions={"uid": item.uid}
        )

    async def remove_finalizer(self, item: Node, finalizer: str) -> None:
        """Remove `finalizer` with a JSON merge patch carrying the resourceVersion, retried on conflict
        (`removeFinalizer` with `retry.RetryOnConflict`). Gone, another object by that name, or the
        finalizer already removed: nothing to do."""
        delay = CONFLICT_BASE
        for attempt in range(CONFLICT_RETRIES):
            try:
                live = await self.get_object(item)
            except NotFound:
                return
            meta = live.get("metadata") or {}
            finalizers = meta.get("finalizers") or []
            if meta.get("uid") != item.uid or finalizer not in finalizers:
                return
            kept = [f for f in finalizers if f != finalizer]
            patch = {"metadata": {"resourceVersion": meta.get("resourceVersion"), "finalizers": kept or None}}
            gvr = self.resource(item)
            try:
                await self.client.patch(
                    gvr, item.name, patch, _namespace(gvr, item.namespace), patch_type="merge"
                )
                return
            except NotFound:
                return
            except Conflict:
                if attempt == CONFLICT_RETRIES - 1:
                    raise
            await asyncio.sleep(delay * (1 + CONFLICT_JITTER * random.random()))
            delay *= CONFLICT_FACTOR
