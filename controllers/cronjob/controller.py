"""The CronJob controller (`cronjob-controller`, alias `cronjob`): runs Jobs on a cron schedule (upstream:
pkg/controller/cronjob/cronjob_controllerv2.go, the v2 controller).

Each sync starts at most one Job: the most recent schedule time missed, never a backlog. After a sync the
CronJob is requeued for its next schedule time, so a CronJob that is not due costs nothing in between. The
Job's name carries its schedule time in minutes, so a restart or a stale cache can never start one time twice.

The Jobs informer is the Job controller's (the same unselected watch). `now` is injectable, as upstream's is.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import cached_property
from typing import Any

from pydantic import Field

from controllers.common.podutil import ensure_indexer
from controllers.cronjob.handlers import CronJobEvents, JobEvents
from controllers.cronjob.sync import CronJobSync
from manager import (
    CONTROLLER_UID_INDEX,
    CRONJOBS,
    JOBS,
    Controller,
    ControllerContext,
    ControllerFlags,
    Lister,
    NotFound,
    PolicyRule,
    Request,
    Result,
    WatchesWith,
    controller_owner,
    controller_uid_index,
)

Obj = dict[str, Any]


class CronJobFlags(ControllerFlags):
    """cronjob-controller's flags (kube-controller-manager's CronJobControllerOptions)."""

    concurrent_cron_job_syncs: int = Field(
        5, gt=0, description="CronJobs synced concurrently (workers of cronjob-controller)."
    )


class CronJobController(Controller):
    name = "cronjob-controller"
    aliases = ("cronjob",)
    enabled_by_default = True
    flags = CronJobFlags
    concurrency = "concurrent_cron_job_syncs"
    queue_name = "cronjob"
    # Each verb is a call it makes (the event sender's rules are the manager's, not repeated here).
    rbac = (
        PolicyRule(("batch",), ("cronjobs",), ("get", "list", "watch")),
        PolicyRule(("batch",), ("cronjobs/status",), ("update",)),
        PolicyRule(("batch",), ("cronjobs/finalizers",), ("update",)),  # blockOwnerDeletion on its Jobs
        PolicyRule(("batch",), ("jobs",), ("get", "list", "watch", "create", "delete")),
    )
    watches = (WatchesWith(CRONJOBS, CronJobEvents, inline=True), WatchesWith(JOBS, JobEvents, inline=True))

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.now: Callable[[], float] = time.time  # tests may replace it

    @cached_property
    def cronjobs(self) -> Lister:
        return self.lister(CRONJOBS)

    @cached_property
    def jobs(self) -> Lister:
        return self.lister(JOBS)

    def setup(self) -> None:
        super().setup()
        ensure_indexer(self.informer(JOBS).indexer, CONTROLLER_UID_INDEX, controller_uid_index)

    def owned_jobs(self, cronjob: Obj) -> list[Obj]:
        """The Jobs this CronJob controls, whatever their labels (through the controller-UID index: upstream
        scans the namespace for a controllerRef of that name, which costs O(Jobs) per sync)."""
        owned = []
        for job in self.jobs.by_index(CONTROLLER_UID_INDEX, str(cronjob["metadata"].get("uid"))):
            ref = controller_owner(job)
            if ref is not None and ref.get("kind") == "CronJob":
                owned.append(job)
        return owned

    async def reconcile(self, request: Request) -> Result | None:
        cronjob = self.cronjobs.get_by_key(request.key)
        if cronjob is None:
            return None
        sync = CronJobSync(self, cronjob, self.owned_jobs(cronjob))
        await sync.cleanup_finished_jobs()
        error: Exception | None = None
        requeue_after: float | None = None
        try:
            requeue_after = await sync.sync()
        except Exception as err:  # the status still records what this sync did before failing
            error = err
        if sync.update_status:
            try:
                await self.client.update_status(CRONJOBS, sync.cronjob)
            except NotFound:
                return None
        if requeue_after is not None:
            return Result(requeue_after=max(requeue_after, 0.0))
        if error is not None:
            raise error
        return None
