"""kubectl against kubesim with the CronJob controller running: `kubectl create cronjob` validation,
`kubectl create job --from=cronjob/x` (an UnexpectedJob, never adopted), bad input reported without a hot
loop, and a manager restart between two schedule times that starts a due time exactly once."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from controllers.cronjob import CronJobController
from kubesim import KubeSim
from manager import CRONJOBS, EVENTS, JOBS, Request
from manager.client.rest import create_client
from manager.testing import controller_of, run_manager, wait_for
from tests.integration.controllers.cronjob.harness import HOUR, NS, Clock, active_names, cronjob, running
from tests.integration.controllers.job.harness import FastJobController
from tests.integration.controllers.namespace.harness import KUBECTL, kubectl

needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")


@needs_kubectl
async def test_kubectl_create_cronjob_validation_and_job_from_cronjob(tmp_path: Path) -> None:
    async with running() as cron:
        kubeconfig = cron.env.sim.kubeconfig
        code, out = await kubectl(
            kubeconfig, tmp_path, "create", "cronjob", "bad", "--image=busybox", "--schedule=off"
        )
        assert (
            code != 0
            and 'spec.schedule: Invalid value: "off": expected exactly 5 fields, found 1: [off]' in out
        )
        code, out = await kubectl(
            kubeconfig, tmp_path, "create", "cronjob", "tz", "--image=busybox", "--schedule=TZ=UTC 0 * * * *"
        )
        assert code != 0 and "cannot use TZ or CRON_TZ in schedule, use timeZone field instead" in out
        code, out = await kubectl(
            kubeconfig, tmp_path, "create", "cronjob", "x" * 53, "--image=busybox", "--schedule=@hourly"
        )
        assert code != 0 and "must be no more than 52 characters" in out
        code, out = await kubectl(
            kubeconfig, tmp_path, "create", "cronjob", "nightly", "--image=busybox", "--schedule=0 3 * * *"
        )
        assert code == 0, out
        created = await cron.get("nightly")
        spec = created["spec"]
        assert (spec["concurrencyPolicy"], spec["suspend"]) == ("Allow", False)
        assert (spec["successfulJobsHistoryLimit"], spec["failedJobsHistoryLimit"]) == (3, 1)
        code, out = await kubectl(kubeconfig, tmp_path, "create", "job", "manual", "--from=cronjob/nightly")
        assert code == 0, out
        await cron.wait_event("nightly", "UnexpectedJob")
        assert (await cron.get("nightly")).get("status", {}).get("active") is None  # never adopted
        assert await cron.job_names("nightly") == ["manual"]


async def test_bad_input_is_reported_without_a_hot_loop_and_others_still_run() -> None:
    async with running() as cron:
        await cron.create(cronjob("every-second", "@every 1s", run_seconds=600))
        await cron.create(cronjob("rejected"))
        await cron.create(cronjob("fine"))
        # A template the API server rejects for a Job (validation of CronJobs has caught up since): fed to
        # the controller through its cache.
        cached = await cron.cached("rejected")
        template = cached["spec"]["jobTemplate"]["spec"]["template"]
        cached["spec"] = {
            **cached["spec"],
            "jobTemplate": {
                "spec": {"template": {**template, "spec": {**template["spec"], "restartPolicy": "Always"}}}
            },
        }
        reconciles_before = cron.ctl.stats.reconciles
        # One second into an hour of the controller's clock (real time plus an offset): the minute that names
        # @every 1s's Job lasts 59 s more, however slowly this test runs, so a second minute's Job cannot
        # appear while it looks (one did when a busy run crossed a minute boundary).
        cron.set_time(cron.next_hour() + 1, "every-second", "rejected", "fine")
        await cron.wait_jobs("fine", 1)
        await cron.wait_event("rejected", "FailedCreate")
        # @every 1s: one Job per minute at most (the name is the minute), never a storm.
        (every,) = await cron.wait_jobs("every-second", 1)
        await cron.wait_status("every-second", lambda s: s.get("active"))
        assert await cron.job_names("every-second") == [every["metadata"]["name"]]
        # The rejected template retries with exponential backoff, not in a tight loop.
        assert cron.ctl.stats.reconciles - reconciles_before < 200
        assert await cron.job_names("rejected") == []


async def test_unknown_time_zone_and_unparseable_schedule_events() -> None:
    async with running() as cron:
        await cron.create(cronjob("tz"))
        await cron.create(cronjob("sched"))
        # The controller reads a CronJob the server stored; feed it bad values directly through its cache.
        cached_tz, cached_sched = await cron.cached("tz"), await cron.cached("sched")
        cached_tz["spec"] = {**cached_tz["spec"], "timeZone": "Mars/Olympus"}
        cached_sched["spec"] = {**cached_sched["spec"], "schedule": "61 * * * *"}
        cron.next_run("tz", "sched")
        await cron.wait_event("tz", "UnknownTimeZone")
        await cron.wait_event("sched", "UnparseableSchedule")
        events = (await cron.client.list(EVENTS, NS))["items"]
        messages = {e["reason"]: e["message"] for e in events}
        assert (
            messages["UnknownTimeZone"] == 'invalid timeZone: "Mars/Olympus": unknown time zone Mars/Olympus'
        )
        assert messages["UnparseableSchedule"] == (
            'unparseable schedule: "61 * * * *" : end of range (61) above maximum (59): 61'
        )
        assert await cron.job_names("tz") == [] and await cron.job_names("sched") == []


async def test_restart_between_two_schedule_times_starts_the_due_time_once(kubesim: KubeSim) -> None:
    clock = Clock()
    client = await create_client(master=kubesim.url)
    try:
        await client.create(CRONJOBS, cronjob("restart", run_seconds=600), NS)
        due = (time.time() // HOUR + 1) * HOUR
        clock.offset = due + 5 - time.time()
        for _ in range(2):
            async with run_manager(kubesim.url, FastJobController, CronJobController) as manager:
                ctl = controller_of(manager, CronJobController)
                ctl.now = clock
                ctl.queue.add(Request(NS, "restart"))  # the first manager's clock already says it is due

                async def recorded() -> bool:
                    obj = await client.get(CRONJOBS, "restart", NS)
                    return bool(active_names(obj.get("status") or {}))

                await wait_for(recorded, 10.0, message="the due Job in status.active")
        jobs = (await client.list(JOBS, NS))["items"]
        assert [j["metadata"]["name"] for j in jobs] == [f"restart-{int(due) // 60}"]
    finally:
        await client.close()
