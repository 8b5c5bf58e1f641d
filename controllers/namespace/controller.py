"""The namespace controller (`namespace-controller`, alias `namespace`): empties a namespace being deleted,
then clears its `kubernetes` finalizer so the API server can remove it (upstream:
pkg/controller/namespace/namespace_controller.go).

Only namespaces with a deletionTimestamp are queued, always after `deletion_grace_period` (5 s upstream:
the components that act on a namespace's deletion get a head start, and a burst of updates costs one
pass). The worker maps the outcome as upstream: content still going away → look again in estimate/2 + 1 s;
any other error → the rate limiter (per key 5 ms doubling up to 60 s, 10 qps overall).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from functools import cached_property
from typing import Any, ClassVar

from pydantic import Field

from controllers.namespace.content import FINALIZER_ESTIMATE_SECONDS
from controllers.namespace.deleter import NamespaceDeleter, ResourcesRemaining
from manager import (
    NAMESPACES,
    BucketRateLimiter,
    Controller,
    ControllerContext,
    ControllerFlags,
    DeletedFinalStateUnknown,
    Duration,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    PolicyRule,
    RateLimiter,
    Request,
    Result,
    Watch,
    WatchesWith,
)


def namespace_rate_limiter() -> RateLimiter[Any]:
    return MaxOfRateLimiter(ItemExponentialFailureRateLimiter(0.005, 60.0), BucketRateLimiter(10.0, 100))


class NamespaceFlags(ControllerFlags):
    """namespace-controller's flags (kube-controller-manager's NamespaceControllerOptions)."""

    concurrent_namespace_syncs: int = Field(
        10, gt=0, description="Namespaces synced concurrently (workers of namespace-controller)."
    )
    namespace_sync_period: Duration = Field(
        300.0, gt=0, description="How often namespace-controller looks at every namespace again."
    )


class NamespaceEvents:
    """Queues namespaces being deleted, after the grace period; nothing else concerns the controller."""

    def __init__(self, ctl: NamespaceController) -> None:
        self.ctl = ctl

    def enqueue(self, namespace: Any) -> None:
        meta = namespace.get("metadata") or {}
        if meta.get("deletionTimestamp"):
            self.ctl.queue.add_after(Request("", meta["name"]), self.ctl.deletion_grace_period)

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self.enqueue(obj)

    def on_update(self, old: Any, new: Any) -> None:
        self.enqueue(new)

    def on_delete(self, obj: Any | DeletedFinalStateUnknown) -> None:
        pass  # gone: nothing left to do


class NamespaceController(Controller):
    name = "namespace-controller"
    aliases = ("namespace",)
    enabled_by_default = True
    flags = NamespaceFlags
    concurrency = "concurrent_namespace_syncs"
    queue_name = "namespace"
    rate_limiter = staticmethod(namespace_rate_limiter)
    # Each verb is a call it makes: it lists and deletes (one by one or by collection) whatever a
    # Terminating namespace holds, then updates the namespace's status and finalize subresources.
    rbac = (
        PolicyRule(("",), ("namespaces",), ("get", "list", "watch")),
        PolicyRule(("",), ("namespaces/finalize", "namespaces/status"), ("update",)),
        PolicyRule(("*",), ("*",), ("list", "delete", "deletecollection")),
    )

    # Upstream values; tests subclass to shorten them. The grace period is namespaceDeletionGracePeriod; the
    # finalizer estimate is how long content held by finalizers is given before the next look.
    deletion_grace_period: ClassVar[float] = 5.0
    finalizer_estimate_seconds: ClassVar[int] = FINALIZER_ESTIMATE_SECONDS

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.sync_period = NamespaceFlags.of(ctx.settings).namespace_sync_period
        self.now: Callable[[], float] = time.time  # wall clock for grace estimates; tests may replace it

    def declare_watches(self) -> Iterable[Watch]:
        # The handler only filters and enqueues: inline. The resync makes every terminating namespace come
        # round again each sync period, whatever happened in between.
        return (WatchesWith(NAMESPACES, NamespaceEvents, inline=True, resync_period=self.sync_period),)

    @cached_property
    def deleter(self) -> NamespaceDeleter:
        return NamespaceDeleter(
            self.client, lambda: self.now(), self.log, finalizer_estimate=self.finalizer_estimate_seconds
        )

    async def reconcile(self, request: Request) -> Result | None:
        if self.lister(NAMESPACES).get_by_key(request.key) is None:
            return None
        try:
            await self.deleter.delete(request.name)
        except ResourcesRemaining as remaining:
            return Result(requeue_after=remaining.estimate // 2 + 1)
        return None
