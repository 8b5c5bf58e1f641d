"""Concurrency policies with a long-running Job, history limits, suspend and resume, missed windows."""

from __future__ import annotations

from manager import CRONJOBS
from tests.integration.controllers.cronjob.harness import HOUR, NS, active_names, cronjob, running


async def test_allow_runs_alongside() -> None:
    async with running() as cron:
        await cron.create(cronjob("allow", run_seconds=600, concurrencyPolicy="Allow"))
        cron.next_run("allow")
        await cron.wait_jobs("allow", 1)
        cron.next_run("allow")
        jobs = await cron.wait_jobs("allow", 2)
        status = (await cron.wait_status("allow", lambda s: len(s.get("active") or ()) == 2))["status"]
        assert active_names(status) == [j["metadata"]["name"] for j in jobs]


async def test_forbid_skips_while_one_runs() -> None:
    async with running() as cron:
        await cron.create(cronjob("forbid", run_seconds=600, concurrencyPolicy="Forbid"))
        cron.next_run("forbid")
        (first,) = await cron.wait_jobs("forbid", 1)
        await cron.wait_status("forbid", lambda s: s.get("active"))
        cron.next_run("forbid")
        await cron.wait_event("forbid", "JobAlreadyActive")
        assert await cron.job_names("forbid") == [first["metadata"]["name"]]


async def test_replace_deletes_the_running_job() -> None:
    async with running() as cron:
        await cron.create(cronjob("replace", run_seconds=600, concurrencyPolicy="Replace"))
        cron.next_run("replace")
        (first,) = await cron.wait_jobs("replace", 1)
        await cron.wait_status("replace", lambda s: s.get("active"))
        cron.next_run("replace")
        await cron.wait_event("replace", "SuccessfulDelete")
        (second,) = await cron.wait_jobs("replace", 1)
        assert second["metadata"]["name"] != first["metadata"]["name"]
        status = (
            await cron.wait_status("replace", lambda s: active_names(s) == [second["metadata"]["name"]])
        )["status"]
        assert len(status["active"]) == 1


async def test_history_limits_keep_the_newest_finished_jobs() -> None:
    async with running() as cron:
        await cron.create(cronjob("ok", successfulJobsHistoryLimit=2, failedJobsHistoryLimit=1))
        await cron.create(cronjob("bad", exit_code=3, successfulJobsHistoryLimit=2, failedJobsHistoryLimit=1))
        names: dict[str, list[str]] = {"ok": [], "bad": []}
        for _ in range(4):
            cron.next_run("ok", "bad")
            for name in names:
                await cron.wait_status(name, lambda s: not s.get("active") and s.get("lastScheduleTime"))
                names[name] = await cron.job_names(name)
                # Wait for this run's Job to finish before the next tick.
                await cron.wait_status(name, lambda s: not s.get("active"))
        await cron.wait_jobs("ok", 2)
        await cron.wait_jobs("bad", 1)
        assert "SuccessfulDelete" in await cron.reasons("ok")
        assert "SuccessfulDelete" in await cron.reasons("bad")
        latest = (await cron.get("ok"))["status"]["lastScheduleTime"]
        assert (await cron.jobs("ok"))[-1]["metadata"]["annotations"][
            "batch.kubernetes.io/cronjob-scheduled-timestamp"
        ] == latest


async def test_suspend_and_resume() -> None:
    async with running() as cron:
        await cron.create(cronjob("paused", suspend=True))
        cron.next_run("paused")
        # Suspended: the sync records nothing and starts nothing; unsuspending is an update, which syncs.
        await cron.client.patch(CRONJOBS, "paused", {"metadata": {"labels": {"poke": "1"}}}, NS)
        cron.tick(0, "paused")
        assert await cron.job_names("paused") == []
        await cron.client.patch(CRONJOBS, "paused", {"spec": {"suspend": False}}, NS)
        await cron.wait_jobs("paused", 1)


async def test_missed_window_with_and_without_starting_deadline() -> None:
    async with running() as cron:
        await cron.create(cronjob("late", startingDeadlineSeconds=60))
        await cron.create(cronjob("anytime"))
        first_hour = cron.next_hour()
        # The controller looks 30 minutes after the hour (it was down): only the CronJob without a deadline
        # still starts that run.
        cron.set_time(first_hour + 1800, "late", "anytime")
        (job,) = await cron.wait_jobs("anytime", 1)
        assert job["metadata"]["name"] == f"anytime-{int(first_hour) // 60}"
        await cron.wait_status("anytime", lambda s: s.get("lastScheduleTime"))
        assert await cron.job_names("late") == []
        assert (await cron.get("late")).get("status", {}).get("lastScheduleTime") is None
        # Within a minute of the next hour: it runs.
        cron.set_time(first_hour + HOUR + 10, "late")
        (late,) = await cron.wait_jobs("late", 1)
        assert late["metadata"]["name"] == f"late-{int(first_hour + HOUR) // 60}"
