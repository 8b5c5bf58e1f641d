"""Workers meeting a refused write (`NotLeader` from the write gate): the key goes back, it is not a
reconcile error, and the worker takes no more keys until the manager stops (no storm of doomed retries)."""

from __future__ import annotations

import asyncio

import structlog
from prometheus_client import REGISTRY

from manager import Controller, ControllerContext, Request, Result
from manager.config.settings import Settings
from manager.controller.worker import run_queue, run_workers
from manager.leaderelection import NotLeader
from manager.workqueue import RateLimitingQueue
from tests.helpers import wait_for


class Fenced(Controller):
    """Every reconcile is refused by the write gate."""

    name = "fenced-worker-test"
    watches = ()

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.calls: list[str] = []

    async def reconcile(self, request: Request) -> Result | None:
        self.calls.append(request.name)
        raise NotLeader("not writing: the lease may have expired")


def fenced() -> Fenced:
    return Fenced(ControllerContext(settings=Settings(), health=None, logger=structlog.get_logger()))


def errors() -> float:
    labels = {"controller": Fenced.name}
    return REGISTRY.get_sample_value("controller_runtime_reconcile_errors_total", labels) or 0.0


async def test_a_reconcile_worker_requeues_the_key_and_idles_until_the_manager_stops() -> None:
    ctl = fenced()
    ctl.queue.add(Request("default", "first"))
    ctl.queue.add(Request("default", "second"))
    errors_before = errors()
    run = asyncio.create_task(run_workers(ctl))
    await wait_for(lambda: ctl.calls, message="the first reconcile")
    ctl.ctx.stopping.set()
    await asyncio.wait_for(run, 2)
    assert ctl.calls == ["first"]
    assert errors() == errors_before
    assert ctl.queue.num_requeues(Request("default", "first")) == 0  # put back, not rate-limited


async def test_a_secondary_queue_worker_does_the_same() -> None:
    ctl = fenced()
    queue: RateLimitingQueue[str] = RateLimitingQueue("fenced-side-queue")
    queue.add("a")
    queue.add("b")
    handled: list[str] = []

    async def handler(item: str) -> None:
        handled.append(item)
        raise NotLeader("not writing")

    run = asyncio.create_task(run_queue(ctl, queue, handler))
    await wait_for(lambda: handled, message="the first item")
    ctl.ctx.stopping.set()
    await asyncio.wait_for(run, 2)
    assert handled == ["a"]
    assert queue.num_requeues("a") == 0
