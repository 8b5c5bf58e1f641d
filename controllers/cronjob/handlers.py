"""Informer event handlers of the CronJob controller (upstream: addJob, updateJob, deleteJob and
updateCronJob in cronjob_controllerv2.go). Inline: they only read caches and enqueue."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from controllers.cronjob.schedule import format_schedule, next_schedule_delay, spec
from cronschedule import ScheduleError, parse_standard
from manager import DeletedFinalStateUnknown, Request, controller_owner, final_object

if TYPE_CHECKING:
    from controllers.cronjob.controller import CronJobController

Obj = dict[str, Any]


class JobEvents:
    """A Job event wakes the CronJob that controls it (by name and UID, from the cache)."""

    def __init__(self, ctl: CronJobController) -> None:
        self.ctl = ctl

    def _enqueue_owner(self, job: Obj, ref: Obj | None) -> None:
        if (
            ref is None
            or ref.get("kind") != "CronJob"
            or not str(ref.get("apiVersion", "")).startswith("batch/")
        ):
            return
        namespace = job["metadata"].get("namespace") or ""
        cronjob = self.ctl.cronjobs.get_by_key(f"{namespace}/{ref.get('name')}")
        if cronjob is not None and cronjob["metadata"].get("uid") == ref.get("uid"):
            self.ctl.queue.add(Request(namespace, str(ref["name"])))

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self._enqueue_owner(obj, controller_owner(obj))

    def on_update(self, old: Any, new: Any) -> None:
        if old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion"):
            return
        old_ref, new_ref = controller_owner(old), controller_owner(new)
        if old_ref != new_ref:
            self._enqueue_owner(old, old_ref)
        self._enqueue_owner(new, new_ref)

    def on_delete(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        job = final_object(obj)
        self._enqueue_owner(job, controller_owner(job))


class CronJobEvents:
    """Adds and deletes sync at once. An update that changes the schedule or the zone waits for the new
    schedule's next time (an unparseable one is reported and left until fixed); any other update syncs."""

    def __init__(self, ctl: CronJobController) -> None:
        self.ctl = ctl

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self.ctl.queue.add(Request.for_object(obj))

    def on_update(self, old: Any, new: Any) -> None:
        request = Request.for_object(new)
        before, after = spec(old), spec(new)
        if before.get("schedule") == after.get("schedule") and before.get("timeZone") == after.get(
            "timeZone"
        ):
            self.ctl.queue.add(request)
            return
        try:
            schedule = parse_standard(format_schedule(new))
        except ScheduleError:
            self.ctl.recorder.event(
                {"apiVersion": "batch/v1", "kind": "CronJob", **new},
                "Warning",
                "UnParseableCronJobSchedule",
                f"unparseable schedule for cronjob: {after.get('schedule')}",
            )
            return
        delay = next_schedule_delay(new, self.ctl.now(), schedule)
        if delay is not None:
            self.ctl.queue.add_after(request, max(delay, 0.0))

    def on_delete(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        self.ctl.queue.add(Request.for_object(final_object(obj)))
