"""The TTL-after-finished controller (`ttl-after-finished-controller`, alias `ttl-after-finished`): deletes a
finished Job `spec.ttlSecondsAfterFinished` seconds after it finished (upstream:
pkg/controller/ttlafterfinished/ttlafterfinished_controller.go).

It shares the Job controller's informer (the same unselected Jobs watch). A Job not yet expired is looked at
again when its TTL runs out. An expired one is read fresh from the API server first, since the cached copy
may be stale and the TTL may have been raised in the meantime, then deleted in the foreground with its UID
as a precondition, so a Job re-created under the same name is never the one deleted.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import cached_property
from typing import Any

from pydantic import Field

from controllers.ttlafterfinished.metrics import JOB_DELETION_DURATION
from controllers.ttlafterfinished.ttl import Expiry, expiry, is_candidate
from manager import (
    JOBS,
    Controller,
    ControllerContext,
    ControllerFlags,
    DeletedFinalStateUnknown,
    Lister,
    NotFound,
    PolicyRule,
    Request,
    Result,
    WatchesWith,
)

Obj = dict[str, Any]


class TTLAfterFinishedFlags(ControllerFlags):
    """ttl-after-finished-controller's flags (kube-controller-manager's TTLAfterFinishedControllerOptions)."""

    concurrent_ttl_after_finished_syncs: int = Field(
        5, gt=0, description="Jobs checked concurrently (workers of ttl-after-finished-controller)."
    )


class JobEvents:
    """Queues Jobs that finished with a TTL set and are not being deleted yet."""

    def __init__(self, ctl: TTLAfterFinishedController) -> None:
        self.ctl = ctl

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        if is_candidate(obj):
            self.ctl.queue.add(Request.for_object(obj))

    def on_update(self, old: Any, new: Any) -> None:
        if is_candidate(new):
            self.ctl.queue.add(Request.for_object(new))

    def on_delete(self, obj: Any | DeletedFinalStateUnknown) -> None:
        pass  # gone already


class TTLAfterFinishedController(Controller):
    name = "ttl-after-finished-controller"
    aliases = ("ttl-after-finished",)
    enabled_by_default = True
    flags = TTLAfterFinishedFlags
    concurrency = "concurrent_ttl_after_finished_syncs"
    queue_name = "ttl_jobs_to_delete"
    rbac = (PolicyRule(("batch",), ("jobs",), ("get", "list", "watch", "delete")),)
    # The handler only filters and enqueues: inline. Unselected, like the Job controller's: one informer.
    watches = (WatchesWith(JOBS, JobEvents, inline=True),)

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.now: Callable[[], float] = time.time  # wall clock, as conditions carry; tests may replace it

    @cached_property
    def jobs(self) -> Lister:
        return self.lister(JOBS)

    async def reconcile(self, request: Request) -> Result | None:
        job = self.jobs.get_by_key(request.key)
        if job is None:
            return None
        checked = self.check(job)
        if not isinstance(checked, Expiry):
            return checked
        try:
            fresh: Obj = await self.client.get(JOBS, request.name, request.namespace)
        except NotFound:
            return None
        checked = self.check(fresh)  # the TTL may have changed since the cache saw the Job
        if not isinstance(checked, Expiry):
            return checked
        self.log.info("deleting expired job", job=request.key)
        await self.client.delete(
            JOBS,
            request.name,
            request.namespace,
            propagation_policy="Foreground",
            preconditions={"uid": fresh["metadata"]["uid"]},
        )
        JOB_DELETION_DURATION.observe(self.now() - checked.expires_at)
        return None

    def check(self, job: Obj) -> Expiry | Result | None:
        """The Job's expiry when its TTL has run out; a requeue for when it will; None when it is no concern
        of ours (being deleted, not finished, no TTL)."""
        if not is_candidate(job):
            return None
        when = expiry(job)
        now = self.now()
        if when.finished_at > now:
            self.log.warning(
                "job finished in the future, likely clock skew in the cluster; its cleanup is deferred",
                job=Request.for_object(job).key,
            )
        remaining = when.remaining(now)
        if remaining <= 0:
            return when
        return Result(requeue_after=remaining)
