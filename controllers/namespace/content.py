"""Deleting everything of one resource in a namespace, then looking at what is left (upstream:
deleteAllContentForGroupVersionResource in pkg/controller/namespace/deletion/namespaced_resources_deleter.go).

One call: estimate (pods only) → DELETE the collection with propagationPolicy Background, or, where the
resource has no deletecollection, LIST and DELETE each object → LIST again (metadata only). What remains
is fine when an estimate says it is still going away, or when finalizers hold it (15 s, time for their
controllers to finish); anything else is an error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from controllers.namespace.estimate import pod_grace_estimate
from manager import PODS, ApiClient, ApiError, ApiResource, GroupVersionResource, NotFound

FINALIZER_ESTIMATE_SECONDS = 15
METHOD_NOT_ALLOWED = 405

# An operation the server does not answer for a resource (discovery omits the verb, or it said 404/405).
Operation = tuple[str, GroupVersionResource]


class UnexpectedItemsRemain(Exception):
    """Objects survived their deletion with no estimate and no finalizer to explain it."""

    def __init__(self, namespace: str, gvr: GroupVersionResource) -> None:
        super().__init__(
            f"unexpected items still remain in namespace: {namespace} for gvr: {describe_gvr(gvr)}"
        )


def describe_gvr(gvr: GroupVersionResource) -> str:
    """A GroupVersionResource as Go prints it in these messages: "apps/v1, Resource=replicasets"."""
    return f"{gvr.group}/{gvr.version}, Resource={gvr.resource}"


def error_text(error: BaseException) -> str:
    """What an error says in a condition: the API server's own message for an API error."""
    if isinstance(error, ApiError) and error.message:
        return error.message
    return str(error) or type(error).__name__


def is_unsupported(error: ApiError) -> bool:
    # Some served resources answer 404 rather than 405 for a verb they lack: both mean "not supported".
    return isinstance(error, NotFound) or error.status == METHOD_NOT_ALLOWED


@dataclass(frozen=True)
class ResourceOutcome:
    """What one resource's pass left: an estimate in seconds (0: none), how many objects remain, how many of
    them each finalizer holds, and the error, if any."""

    estimate: int = 0
    remaining: int = 0
    finalizers: Mapping[str, int] = field(default_factory=dict)
    error: Exception | None = None


class ContentDeleter:
    """Deletes the objects of one resource at a time; remembers which resources lack list or
    deletecollection so it does not ask again."""

    def __init__(
        self,
        client: ApiClient,
        now: Callable[[], float],
        finalizer_estimate: int = FINALIZER_ESTIMATE_SECONDS,
    ) -> None:
        self.client = client
        self.now = now
        self.finalizer_estimate = finalizer_estimate
        self._unsupported: set[Operation] = set()

    def supports(self, resource: ApiResource, verb: str) -> bool:
        return resource.supports(verb) and (verb, resource.gvr) not in self._unsupported

    async def delete_resource(
        self, resource: ApiResource, namespace: str, deleted_at: float
    ) -> ResourceOutcome:
        gvr = resource.gvr
        try:
            estimate = await self.estimate(gvr, namespace, deleted_at)
        except Exception as exc:
            return ResourceOutcome(error=exc)
        try:
            if not await self.delete_collection(resource, namespace):
                await self.delete_each(resource, namespace)
            items = await self.list_metadata(resource, namespace)
        except Exception as exc:
            return ResourceOutcome(estimate=estimate, error=exc)
        if items is None:  # cannot be listed: nothing more to learn
            return ResourceOutcome(estimate=estimate)
        if not items:
            return ResourceOutcome()
        finalizers: dict[str, int] = {}
        for item in items:
            for finalizer in (item.get("metadata") or {}).get("finalizers") or ():
                finalizers[finalizer] = finalizers.get(finalizer, 0) + 1
        if estimate:
            return ResourceOutcome(estimate, len(items), finalizers)
        if finalizers:
            return ResourceOutcome(self.finalizer_estimate, len(items), finalizers)
        return ResourceOutcome(0, len(items), error=UnexpectedItemsRemain(namespace, gvr))

    async def estimate(self, gvr: GroupVersionResource, namespace: str, deleted_at: float) -> int:
        """Seconds the resource's objects may still need to go: only pods have graceful deletion."""
        if gvr.group != PODS.group or gvr.resource != PODS.resource:
            return 0
        pods = await self.client.list(PODS, namespace)
        return pod_grace_estimate(pods.get("items") or (), deleted_at, self.now())

    async def delete_collection(self, resource: ApiResource, namespace: str) -> bool:
        """One DELETE for the whole collection; False when the resource does not support it."""
        if not self.supports(resource, "deletecollection"):
            return False
        try:
            # Background, not the resource's default: the namespace goes anyway, so nothing is to be orphaned
            # (a Job's default would orphan its pods) and nothing is to wait in the foreground.
            await self.client.delete_collection(resource.gvr, namespace, propagation_policy="Background")
        except ApiError as exc:
            if not is_unsupported(exc):
                raise
            self._unsupported.add(("deletecollection", resource.gvr))
            return False
        return True

    async def list_metadata(self, resource: ApiResource, namespace: str) -> list[dict[str, Any]] | None:
        """The objects' metadata, or None when the resource cannot be listed."""
        if not self.supports(resource, "list"):
            return None
        try:
            answer = await self.client.list(resource.gvr, namespace, metadata_only=True)
        except ApiError as exc:
            if not is_unsupported(exc):
                raise
            self._unsupported.add(("list", resource.gvr))
            return None
        return list(answer.get("items") or ())

    async def delete_each(self, resource: ApiResource, namespace: str) -> None:
        items = await self.list_metadata(resource, namespace)
        for item in items or ():
            name = (item.get("metadata") or {}).get("name")
            if not name:
                continue
            try:
                await self.client.delete(resource.gvr, name, namespace, propagation_policy="Background")
            except ApiError as exc:
                if not is_unsupported(exc):
                    raise
