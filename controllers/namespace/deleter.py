"""Emptying a terminating namespace and releasing it (upstream: namespacedResourcesDeleter.Delete in
pkg/controller/namespace/deletion/namespaced_resources_deleter.go).

`delete(name)`:
1. fresh GET: gone, or not being deleted → done;
2. phase Terminating (UpdateStatus, retried on conflict as long as the UID stays the same);
3. spec.finalizers already empty → done;
4. delete all content; an estimate > 0 → `ResourcesRemaining` (the caller looks again later);
5. PUT /finalize with spec.finalizers less `kubernetes`. The API server removes the namespace once both its
   spec.finalizers and metadata.finalizers are empty: the controller never DELETEs it.

Content is deleted in Kubernetes 1.33+'s order (the OrderedNamespaceDeletion gate, on by default since 1.33,
GA in 1.34): pods first, and nothing else while any pod remains, so no policy or config a running pod relies
on disappears before the pod. v1.32 walked the resources in no particular order. While pods remain, the
conditions name them (NamespaceContentRemaining, NamespaceFinalizersRemaining); upstream writes the
conditions of that early return without the totals, so they read "all removed" while pods are still there.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable
from typing import Any

from controllers.common.podutil import parse_time
from controllers.namespace.conditions import ConditionUpdater
from controllers.namespace.content import (
    FINALIZER_ESTIMATE_SECONDS,
    ContentDeleter,
    ResourceOutcome,
    error_text,
)
from manager import (
    NAMESPACES,
    PODS,
    ApiClient,
    ApiResource,
    Conflict,
    Discovery,
    NotFound,
    discover_resources,
)

Obj = dict[str, Any]
FINALIZER_TOKEN = "kubernetes"


class ResourcesRemaining(Exception):
    """Content is still going away; look again in about `estimate` / 2 seconds."""

    def __init__(self, estimate: int) -> None:
        super().__init__(
            f"some content remains in the namespace, estimate {estimate} seconds before it is removed"
        )
        self.estimate = estimate


class ContentDeletionFailed(Exception):
    """The errors of one pass (discovery, content), all of them: every resource was still tried."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__(errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]")
        self.errors = errors


def resource_label(resource: ApiResource) -> str:
    """How the conditions name a resource: "<resource>.<group>" ("pods." for the core group)."""
    return f"{resource.gvr.resource}.{resource.gvr.group}"


def _is_pods(resource: ApiResource) -> bool:
    return resource.gvr.group == PODS.group and resource.gvr.resource == PODS.resource


class Totals:
    """What a pass left behind, summed over resources, and the largest estimate."""

    def __init__(self) -> None:
        self.estimate = 0
        self.remaining: dict[str, int] = {}
        self.finalizers: dict[str, int] = {}
        self.errors: list[str] = []

    def add(self, resource: ApiResource, outcome: ResourceOutcome, conditions: ConditionUpdater) -> None:
        if outcome.error is not None:
            text = error_text(outcome.error)
            self.errors.append(text)
            conditions.delete_content_failed(text)
        self.estimate = max(self.estimate, outcome.estimate)
        if outcome.remaining:
            self.remaining[resource_label(resource)] = outcome.remaining
            for finalizer, count in outcome.finalizers.items():
                self.finalizers[finalizer] = self.finalizers.get(finalizer, 0) + count


class NamespaceDeleter:
    def __init__(
        self,
        client: ApiClient,
        now: Callable[[], float],
        log: Any,
        *,
        finalizer_estimate: int = FINALIZER_ESTIMATE_SECONDS,
        discover: Callable[[ApiClient], Awaitable[Discovery]] = discover_resources,
    ) -> None:
        self.client = client
        self.now = now
        self.log = log
        self.discover = discover
        self.content = ContentDeleter(client, now, finalizer_estimate)

    async def delete(self, name: str) -> None:
        try:
            namespace = await self.client.get(NAMESPACES, name)
        except NotFound:
            return
        if not namespace["metadata"].get("deletionTimestamp"):
            return
        try:
            namespace = await self.retry_on_conflict(namespace, self.ensure_terminating)
        except NotFound:
            return
        if not namespace["metadata"].get("deletionTimestamp"):
            return
        if not (namespace.get("spec") or {}).get("finalizers"):
            return  # finalized already (by us, or someone else emptied the list)
        namespace, estimate = await self.delete_all_content(namespace)
        if estimate > 0:
            raise ResourcesRemaining(estimate)
        try:
            await self.retry_on_conflict(namespace, self.finalize)
        except NotFound:
            return  # another controller sharing the token finished first

    async def retry_on_conflict(self, namespace: Obj, write: Callable[[Obj], Awaitable[Obj]]) -> Obj:
        """`write(namespace)`, again on a fresh copy after each conflict, while it is the same namespace."""
        latest = namespace
        while True:
            try:
                return await write(latest)
            except Conflict:
                previous = latest
                latest = await self.client.get(NAMESPACES, previous["metadata"]["name"])
                if latest["metadata"].get("uid") != previous["metadata"].get("uid"):
                    raise RuntimeError("namespace uid has changed across retries") from None

    async def ensure_terminating(self, namespace: Obj) -> Obj:
        status = namespace.get("status") or {}
        if not namespace["metadata"].get("deletionTimestamp") or status.get("phase") == "Terminating":
            return namespace
        updated = {**namespace, "status": {**status, "phase": "Terminating"}}
        result: Obj = await self.client.update_status(NAMESPACES, updated)
        return result

    async def finalize(self, namespace: Obj) -> Obj:
        spec = namespace.get("spec") or {}
        kept = sorted({f for f in spec.get("finalizers") or () if f != FINALIZER_TOKEN})
        body = {**namespace, "spec": {**spec, "finalizers": kept}}
        result: Obj = await self.client.update(NAMESPACES, body, subresource="finalize")
        return result

    async def delete_all_content(self, namespace: Obj) -> tuple[Obj, int]:
        """Delete what the namespace holds; returns the namespace (as last written) and the estimate in
        seconds (0: all gone). Raises `ContentDeletionFailed` when anything failed, after trying everything
        and writing the conditions."""
        name = namespace["metadata"]["name"]
        deleted_at = parse_time(namespace["metadata"].get("deletionTimestamp")) or self.now()
        conditions = ConditionUpdater()
        totals = Totals()
        resources = await self.deletable_resources(conditions, totals)
        pods = [r for r in resources if _is_pods(r)]
        for resource in pods:
            totals.add(resource, await self.content.delete_resource(resource, name, deleted_at), conditions)
        if not totals.remaining:  # ordered deletion: the rest only once the pods are gone
            for resource in resources:
                if not _is_pods(resource):
                    outcome = await self.content.delete_resource(resource, name, deleted_at)
                    totals.add(resource, outcome, conditions)
        conditions.content_totals(totals.remaining, totals.finalizers)
        namespace = await self.write_conditions(namespace, conditions)
        self.log.debug(
            "namespace content pass", namespace=name, estimate=totals.estimate, errors=len(totals.errors)
        )
        if totals.errors:
            raise ContentDeletionFailed(totals.errors)
        return namespace, totals.estimate

    async def deletable_resources(self, conditions: ConditionUpdater, totals: Totals) -> list[ApiResource]:
        """Namespaced resources that support delete. Discovery failures do not stop the pass (what could be
        read is still deleted) but they fail it: the namespace is not released while a group is unseen."""
        try:
            discovery = await self.discover(self.client)
        except Exception as exc:
            conditions.discovery_failed(error=error_text(exc))
            totals.errors.append(error_text(exc))
            return []
        if discovery.failed:
            conditions.discovery_failed(discovery.failed)
            totals.errors.extend(f"{gv}: {why}" for gv, why in sorted(discovery.failed.items()))
        return [r for r in discovery.resources if r.gvr.namespaced and r.supports("delete")]

    async def write_conditions(self, namespace: Obj, conditions: ConditionUpdater) -> Obj:
        """UpdateStatus when any condition changed; a failure is logged, not fatal (the next pass retries)."""
        status = copy.deepcopy(namespace.get("status") or {})
        if not conditions.apply(status, self.now()):
            return namespace
        try:
            updated: Obj = await self.client.update_status(NAMESPACES, {**namespace, "status": status})
        except Exception as exc:
            self.log.warning(
                "could not update the namespace's conditions",
                namespace=namespace["metadata"]["name"],
                error=error_text(exc),
            )
            return namespace
        return updated
