"""The Job controller's plug-in contract: names, alias, default, workers setting, queues and their limiter;
the claim shortcut and the queue keys."""

from __future__ import annotations

import importlib.metadata
from typing import Any

import structlog

from controllers.common.podutil import Selector
from controllers.job import JobController
from controllers.job.controller import JobFlags, _all_claimed, _request
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


async def test_batched_syncs_wait_the_period_and_go_together_within_a_tenth_of_it() -> None:
    # the queue's metrics read the loop's clock; its timers run on the fake one
    ctl = make()
    clock = FakeClock(1000.0)
    ctl.queue.clock = clock
    ctl.enqueue_key_batched("ns/alone")
    clock.step(1.0)
    assert ctl.queue.get_nowait() == Request("ns", "alone")  # no other Job due near it: on time
    ctl.enqueue_key_batched("ns/a")  # due at 1002.0
    clock.step(0.5)
    ctl.enqueue_key_batched("ns/a")  # a later event of the same batch keeps the earlier time
    clock.step(0.45)
    ctl.enqueue_key_batched("ns/b")  # due at 1002.95: outside a's window (1002.0 to 1002.1)
    clock.step(0.03)
    ctl.enqueue_key_batched("ns/c")  # due at 1002.98
    clock.step(0.03)
    assert ctl.queue.get_nowait() == Request("ns", "a") and len(ctl.queue) == 0  # a alone in its window
    clock.step(0.95)  # 1002.96: b is due, c within b's window: b waits for the window's end
    assert len(ctl.queue) == 0
    clock.step(0.1)
    assert [ctl.queue.get_nowait(), ctl.queue.get_nowait()] == [Request("ns", "b"), Request("ns", "c")]


def test_claim_shortcut_only_when_every_pod_is_kept_as_is() -> None:
    """A sync skips the claim pass only when it would keep every pod unchanged: each one controlled by
    this Job and matched by its selector (an orphan, another owner's pod or an unmatched one needs it)."""
    selector = Selector.from_label_selector({"matchLabels": {"app": "a"}})

    def pod(owner_uid: str | None, app: str) -> dict[str, Any]:
        refs = [{"kind": "Job", "uid": owner_uid, "controller": True}] if owner_uid else []
        return {"metadata": {"name": "p", "labels": {"app": app}, "ownerReferences": refs}}

    assert _all_claimed([pod("u1", "a"), pod("u1", "a")], "u1", selector)
    assert _all_claimed([], "u1", selector)
    assert not _all_claimed([pod("u1", "a"), pod("u1", "b")], "u1", selector)  # to be released
    assert not _all_claimed([pod("u2", "a")], "u1", selector)  # another owner's
    assert not _all_claimed([pod(None, "a")], "u1", selector)  # an orphan: adoption


def test_queue_keys_are_the_requests_from_key_gives() -> None:
    for key in ("ns/job", "job", "a/b/c"):
        request = _request(key)
        assert request == Request.from_key(key) and type(request) is Request and request.key == key
