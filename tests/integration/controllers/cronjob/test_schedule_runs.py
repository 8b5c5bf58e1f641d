"""The CronJob controller starts the most recent due run, with upstream's Job name, labels, annotations and
owner reference, keeps status.active / lastScheduleTime / lastSuccessfulTime, and requeues itself."""

from __future__ import annotations

from prometheus_client import REGISTRY

from controllers.common.podutil import parse_time
from tests.integration.controllers.cronjob.harness import HOUR, active_names, cronjob, running

SKEW = "cronjob_controller_job_creation_skew_duration_seconds_count"


async def test_a_due_time_creates_one_job_as_upstream_names_and_labels_it() -> None:
    async with running() as cron:
        created = await cron.create(cronjob("hourly", "0 * * * *"))
        assert await cron.job_names("hourly") == []
        skew_before = REGISTRY.get_sample_value(SKEW) or 0.0
        cron.next_run("hourly")
        (job,) = await cron.wait_jobs("hourly", 1)
        scheduled = (cron.clock() // HOUR) * HOUR
        assert job["metadata"]["name"] == f"hourly-{int(scheduled) // 60}"
        assert job["metadata"]["labels"]["team"] == "batch"
        annotations = job["metadata"]["annotations"]
        assert annotations["note"] == "from-template"
        stamp = annotations["batch.kubernetes.io/cronjob-scheduled-timestamp"]
        assert stamp.endswith("Z") and parse_time(stamp) == scheduled
        (owner,) = job["metadata"]["ownerReferences"]
        assert owner == {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "name": "hourly",
            "uid": created["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
        status = (await cron.wait_status("hourly", lambda s: s.get("lastSuccessfulTime")))["status"]
        assert parse_time(status["lastScheduleTime"]) == scheduled
        assert "SuccessfulCreate" in await cron.reasons("hourly")
        await cron.wait_event("hourly", "SawCompletedJob")
        assert active_names((await cron.get("hourly")).get("status") or {}) == []
        assert (REGISTRY.get_sample_value(SKEW) or 0.0) == skew_before + 1
        # Looking again within the same hour starts nothing more.
        cron.tick(60, "hourly")
        assert await cron.job_names("hourly") == [job["metadata"]["name"]]


async def test_time_zone_annotation_and_the_next_time_is_requeued() -> None:
    async with running() as cron:
        await cron.create(cronjob("london", "30 * * * *", timeZone="Europe/London", run_seconds=60))
        cron.next_run("london", minute=30)
        (job,) = await cron.wait_jobs("london", 1)
        stamp = job["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"]
        assert stamp[-6:] in ("+00:00", "+01:00") or stamp.endswith("Z")
        assert stamp[14:19] == "30:00"
        status = (await cron.wait_status("london", lambda s: s.get("active")))["status"]
        assert active_names(status) == [job["metadata"]["name"]]
        # The controller queued the CronJob for its next time (requeue_after, not polling).
        assert cron.ctl.queue.waiting >= 1
