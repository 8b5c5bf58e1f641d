"""The Job controller's plug-in contract: names, alias, default, workers setting, queues and their limiter."""

from __future__ import annotations

import importlib.metadata
from typing import Any

import structlog

from controllers.job import JobController
from controllers.job.controller import JobFlags
from manager import ControllerContext, Request
from manager.config.settings import Settings
from manager.workqueue.clock import FakeClock


def make(**settings: Any) -> JobController:
    ctx = ControllerContext(
        settings=Settings.with_flags([JobFlags])(**settings), health=None, logger=structlog.get_logger()
    )
    return JobController(ctx)


def test_registered_entry_point() -> None:
    eps = {ep.name: ep.value for ep in importlib.metadata.entry_points(group="aiokcm.controllers")}
    assert eps["job-controller"] == "controllers.job:JobController"
    assert JobController.name == "job-controller" and JobController.aliases == ("job",)
    assert JobController.enabled_by_default


def test_queues_workers_and_limiter() -> None:
    ctl = make(concurrent_job_syncs=7)
    assert ctl.workers() == 7
    assert ctl.workqueue_name() == "job" and ctl.orphan_queue.name == "job_orphan_pod"
    request = Request("ns", "j")
    delays = [ctl.queue.rate_limiter.when(request) for _ in range(8)]
    assert delays == [1, 2, 4, 8, 16, 32, 60, 60]  # DefaultJobApiBackOff 1 s .. MaxJobApiBackOff 60 s
    assert [ctl.orphan_queue.rate_limiter.when("ns/p") for _ in range(3)] == [1, 2, 4]


def test_managed_by_setting_and_upstream_timings() -> None:
    assert make().managed_by == "kubernetes.io/job-controller"
    assert make(job_controller_managed_by="aiokcm.io/job-controller").managed_by == "aiokcm.io/job-controller"
    assert JobController.sync_batch_period == 1.0
    assert (JobController.pod_failure_backoff, JobController.max_pod_failure_backoff) == (10.0, 600.0)


async def test_batched_syncs_wait_the_period_then_the_next_tick_of_its_tenth() -> None:
    # the queue's metrics read the loop's clock; its timers run on the fake one
    ctl = make()
    clock = FakeClock(1000.03)
    ctl.queue.clock = clock
    ctl.enqueue_key_batched("ns/a")  # the period ends at 1001.03: due at the tick 1001.1
    clock.step(0.5)
    ctl.enqueue_key_batched("ns/a")  # a later event of the same batch keeps the earlier tick
    clock.step(0.5)
    ctl.enqueue_key_batched("ns/b")  # at 1001.03: due at 1002.1
    clock.step(0.06)
    assert len(ctl.queue) == 0  # 1001.09: past the period, before the tick
    clock.step(0.02)
    assert ctl.queue.get_nowait() == Request("ns", "a") and len(ctl.queue) == 0
    clock.step(1.0)
    assert ctl.queue.get_nowait() == Request("ns", "b")
