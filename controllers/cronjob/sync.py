"""One sync of one CronJob (upstream: cleanupFinishedJobs, syncCronJob and deleteJob in
pkg/controller/cronjob/cronjob_controllerv2.go): account for its Jobs, trim the finished ones beyond the
history limits, and start the most recent due run if the concurrency policy lets it.

It works on a copy of the CronJob's status; `update_status` says whether the controller must write it back.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from controllers.common.podutil import parse_time
from controllers.cronjob import jobs as jb
from controllers.cronjob.metrics import JOB_CREATION_SKEW
from controllers.cronjob.schedule import (
    InvalidScheduleError,
    Missed,
    annotation_zone,
    format_schedule,
    most_recent_schedule_time,
    next_schedule_delay,
    uses_tz_prefix,
)
from cronschedule import Schedule, ScheduleError, UnknownTimeZoneError, load_location, parse_standard
from manager import CRONJOBS, JOBS, AlreadyExists, ApiError, NotFound, controller_owner, format_time

if TYPE_CHECKING:
    from controllers.cronjob.controller import CronJobController

Obj = dict[str, Any]

UNSUPPORTED_TZ = (
    'CRON_TZ or TZ used in schedule "{}" is not officially supported, see '
    "https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details"
)

TOO_MANY_MISSED = (
    "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew"
)


def _uid(obj: Obj) -> str:
    return str(obj["metadata"].get("uid") or "")


def _message(err: Exception) -> str:
    return (err.message or str(err)) if isinstance(err, ApiError) else str(err)


class CronJobSync:
    def __init__(self, ctl: CronJobController, cronjob: Obj, jobs: list[Obj]) -> None:
        self.ctl = ctl
        self.jobs = jobs
        self.update_status = False
        self._use(cronjob)

    def _use(self, cronjob: Obj) -> None:
        """Work on `cronjob` with a status of our own (metadata and spec stay shared: never mutated)."""
        self.cronjob: Obj = {
            **cronjob,
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "status": copy.deepcopy(cronjob.get("status") or {}),
        }
        self.status: Obj = self.cronjob["status"]

    # ------------------------------------------------------------------ helpers
    @property
    def name(self) -> str:
        return str(self.cronjob["metadata"]["name"])

    @property
    def namespace(self) -> str:
        return str(self.cronjob["metadata"]["namespace"])

    @property
    def spec(self) -> Obj:
        spec: Obj = self.cronjob.get("spec") or {}
        return spec

    def event(self, kind: str, reason: str, message: str) -> None:
        self.ctl.recorder.event(self.cronjob, kind, reason, message)

    def active(self) -> list[Obj]:
        active: list[Obj] = self.status.setdefault("active", [])
        return active

    def in_active(self, uid: str) -> bool:
        return any(ref.get("uid") == uid for ref in self.status.get("active") or ())

    def remove_active(self, uid: str) -> None:
        remaining = [ref for ref in self.status.get("active") or () if ref.get("uid") != uid]
        if remaining:
            self.status["active"] = remaining
        else:
            self.status.pop("active", None)

    async def delete_job(self, job: Obj) -> bool:
        """Delete a Job in the background (its pods go with it) and forget it in `status.active`."""
        name = job["metadata"]["name"]
        try:
            await self.ctl.client.delete(JOBS, name, self.namespace, propagation_policy="Background")
        except ApiError as err:
            self.event("Warning", "FailedDelete", f"Deleted job: {_message(err)}")
            self.ctl.log.info("cannot delete job", job=name, cronjob=self.name, error=str(err))
            return False
        self.remove_active(_uid(job))
        self.event("Normal", "SuccessfulDelete", f"Deleted job {name}")
        return True

    # ------------------------------------------------------------------ history
    async def cleanup_finished_jobs(self) -> None:
        """Delete the oldest finished Jobs beyond successfulJobsHistoryLimit and failedJobsHistoryLimit."""
        limits = {
            "Complete": self.spec.get("successfulJobsHistoryLimit"),
            "Failed": self.spec.get("failedJobsHistoryLimit"),
        }
        for outcome, limit in limits.items():
            if limit is None:
                continue
            finished = [job for job in self.jobs if jb.finished_status(job) == outcome]
            for job in jb.to_delete(finished, int(limit)):
                if await self.delete_job(job):
                    self.update_status = True

    # ------------------------------------------------------------------ the schedule
    async def sync(self) -> float | None:
        """Bring `status` up to date and start a Job if one is due; the seconds until the next look, or
        None when only a change to the CronJob can make a difference. Raises to be retried."""
        now = self.ctl.now()
        await self.account_for_jobs()
        if self.cronjob["metadata"].get("deletionTimestamp"):
            return None
        zone = self.spec.get("timeZone")
        if zone is not None:
            try:
                load_location(str(zone))
            except UnknownTimeZoneError as err:
                self.event("Warning", "UnknownTimeZone", f'invalid timeZone: "{zone}": {err}')
                return None
        if self.spec.get("suspend"):
            return None  # resuming is an update, which syncs
        if uses_tz_prefix(self.cronjob):
            self.event("Warning", "UnsupportedSchedule", UNSUPPORTED_TZ.format(self.spec.get("schedule")))
        schedule_text = str(self.spec.get("schedule") or "")
        try:
            schedule = parse_standard(format_schedule(self.cronjob))
        except ScheduleError as err:
            self.event("Warning", "UnparseableSchedule", f'unparseable schedule: "{schedule_text}" : {err}')
            return None
        try:
            recent = most_recent_schedule_time(self.cronjob, now, schedule, include_starting_deadline=True)
        except InvalidScheduleError as err:
            self.event("Warning", "InvalidSchedule", f"invalid schedule: {schedule_text} : {err}")
            return None
        scheduled = recent.time
        if scheduled is None or scheduled > now:
            return next_schedule_delay(self.cronjob, now, schedule)
        if recent.missed is Missed.MANY:
            self.event("Warning", "TooManyMissedTimes", TOO_MANY_MISSED)
        return await self.start(scheduled, now, schedule)

    async def account_for_jobs(self) -> None:
        """Drop finished and vanished Jobs from `status.active`, note the latest success, and report Jobs
        we own but never started (e.g. `kubectl create job --from=cronjob/x`): never adopted."""
        children = set()
        for job in self.jobs:
            uid = _uid(job)
            children.add(uid)
            found, finished = self.in_active(uid), jb.finished_status(job)
            if not found and finished is None:
                fresh: Obj = await self.ctl.client.get(CRONJOBS, self.name, self.namespace)
                if any(ref.get("uid") == uid for ref in (fresh.get("status") or {}).get("active") or ()):
                    self._use(fresh)  # our cache was behind our own status write
                    continue
                self.event(
                    "Warning",
                    "UnexpectedJob",
                    f"Saw a job that the controller did not create or forgot: {job['metadata']['name']}",
                )
            elif found and finished is not None:
                self.remove_active(uid)
                name = job["metadata"]["name"]
                self.event("Normal", "SawCompletedJob", f"Saw completed job: {name}, status: {finished}")
                self.update_status = True
            elif jb.is_succeeded(job):
                completed = (job.get("status") or {}).get("completionTime")
                last = parse_time(self.status.get("lastSuccessfulTime"))
                at = parse_time(completed)
                if at is not None and (last is None or at > last):
                    self.status["lastSuccessfulTime"] = completed
                    self.update_status = True
        for ref in list(self.status.get("active") or ()):
            if ref.get("uid") in children:
                continue
            # Not in the cache: ask the server before believing it gone (a slow watch is not a deletion).
            try:
                await self.ctl.client.get(JOBS, ref["name"], ref.get("namespace") or self.namespace)
            except NotFound:
                self.event("Normal", "MissingJob", f"Active job went missing: {ref['name']}")
                self.remove_active(str(ref.get("uid") or ""))
                self.update_status = True

    async def start(self, scheduled: float, now: float, schedule: Schedule) -> float | None:
        """Create the Job for `scheduled` unless too late, already done, or forbidden by the policy."""
        deadline = self.spec.get("startingDeadlineSeconds")
        if deadline is not None and scheduled + int(deadline) < now:
            when = jb.rfc1123z(scheduled)
            self.event("Warning", "MissSchedule", f"Missed scheduled time to start a job: {when}")
            return next_schedule_delay(self.cronjob, now, schedule)
        name = jb.job_name(self.name, scheduled)
        if any(ref.get("name") == name for ref in self.status.get("active") or ()) or parse_time(
            self.status.get("lastScheduleTime")
        ) == float(scheduled):
            return next_schedule_delay(self.cronjob, now, schedule)
        policy = self.spec.get("concurrencyPolicy") or "Allow"
        if policy == "Forbid" and self.status.get("active"):
            self.event(
                "Normal",
                "JobAlreadyActive",
                "Not starting job because prior execution is running and concurrency policy is Forbid",
            )
            return next_schedule_delay(self.cronjob, now, schedule)
        if policy == "Replace":
            for ref in list(self.status.get("active") or ()):
                try:
                    job = await self.ctl.client.get(JOBS, ref["name"], ref.get("namespace") or self.namespace)
                except ApiError as err:
                    self.event("Warning", "FailedGet", f"Get job: {_message(err)}")
                    raise
                if not await self.delete_job(job):
                    raise RuntimeError(f"could not replace job {self.namespace}/{ref['name']}")
                self.update_status = True
        outcome = await self.create(
            jb.job_from_template(self.cronjob, scheduled, annotation_zone(self.cronjob))
        )
        if outcome is None:
            return None
        created, existed = outcome
        self.active().append(jb.object_reference(created))
        self.status["lastScheduleTime"] = format_time(scheduled)
        self.update_status = True
        if not existed:
            skew = (parse_time(created["metadata"].get("creationTimestamp")) or now) - scheduled
            JOB_CREATION_SKEW.observe(skew)
            self.event("Normal", "SuccessfulCreate", f"Created job {created['metadata']['name']}")
        return next_schedule_delay(self.cronjob, now, schedule)

    async def create(self, job: Obj) -> tuple[Obj, bool] | None:
        """POST the Job; (the Job, whether it existed already). A Job of that name we made earlier but lost
        from `status.active` (a crash between the create and the status write) is taken back; anything else
        of that name wins. None: nothing more to do."""
        try:
            created: Obj = await self.ctl.client.create(JOBS, job, self.namespace)
            return created, False
        except AlreadyExists:
            existing: Obj = await self.ctl.client.get(JOBS, job["metadata"]["name"], self.namespace)
            owner = controller_owner(existing)
            if owner is None or owner.get("uid") != _uid(self.cronjob) or self.in_active(_uid(existing)):
                return None
            self.ctl.log.info("job already exists", job=job["metadata"]["name"], cronjob=self.name)
            return existing, True
        except ApiError as err:
            if err.has_cause("NamespaceTerminating"):
                return None  # every create fails there; the namespace takes the CronJob with it
            self.event("Warning", "FailedCreate", f"Error creating job: {_message(err)}")
            raise
