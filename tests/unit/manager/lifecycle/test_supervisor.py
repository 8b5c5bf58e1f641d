"""Supervised controller loops: restart with backoff on a fake clock, health while down, isolation."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, MutableMapping
from typing import Any

import pytest
import structlog

from manager.lifecycle.supervisor import ControllerGroup, State, SupervisedController
from tests.helpers import wait_for

Logs = list[MutableMapping[str, Any]]  # what structlog.testing.capture_logs collects


@pytest.fixture(autouse=True)
def captured_logs() -> Iterator[Logs]:
    """Keep crash tracebacks out of the terminal (and cheap); tests may inspect them."""
    with structlog.testing.capture_logs() as logs:
        yield logs


class FakeTime:
    """A clock that only moves when the supervisor sleeps (or a test moves it)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []
        self.gate: asyncio.Event | None = None  # when set up, sleeps block until the test opens it

    def clock(self) -> float:
        return self.now

    async def sleep(self, delay: float) -> None:
        self.sleeps.append(delay)
        if self.gate is not None:
            await self.gate.wait()
        self.now += delay
        await asyncio.sleep(0)


class Crasher:
    """run() raises `crashes` times, then blocks until `stopping` is set.

    With `time`, runs from call number `long_from` on last 61 fake seconds before crashing."""

    def __init__(
        self, crashes: int, stopping: asyncio.Event, time: FakeTime | None = None, long_from: int = 0
    ) -> None:
        self.crashes = crashes
        self.stopping = stopping
        self.calls = 0
        self.time = time
        self.long_from = long_from

    async def run(self) -> None:
        self.calls += 1
        if self.time is not None and self.calls >= self.long_from:
            self.time.now += 61
        if self.calls <= self.crashes:
            raise RuntimeError(f"boom {self.calls}")
        await self.stopping.wait()


def supervise(target: Crasher, stopping: asyncio.Event, time: FakeTime) -> SupervisedController:
    return SupervisedController("crasher", target.run, stopping, clock=time.clock, sleep=time.sleep)


async def test_restarts_with_exponential_backoff_capped_at_60s(captured_logs: Logs) -> None:
    stopping, time = asyncio.Event(), FakeTime()
    target = Crasher(9, stopping)
    supervised = supervise(target, stopping, time)
    task = asyncio.create_task(supervised.run())
    await wait_for(lambda: target.calls == 10, message="tenth run")
    assert time.sleeps == [1, 2, 4, 8, 16, 32, 60, 60, 60]
    assert supervised.restarts == 9
    assert supervised.state is State.RUNNING
    assert supervised.health_check() is None
    assert supervised.last_error == "RuntimeError: boom 9"
    crashes = [e for e in captured_logs if e["event"] == "controller loop died; restarting after backoff"]
    assert [e["backoff_seconds"] for e in crashes] == time.sleeps
    assert all(e["controller"] == "crasher" and isinstance(e["exc_info"], RuntimeError) for e in crashes)
    stopping.set()
    await asyncio.wait_for(task, 5)
    assert supervised.state is State.STOPPED  # type: ignore[comparison-overlap]  # narrowed before the await


async def test_health_fails_while_waiting_out_the_backoff() -> None:
    stopping, time = asyncio.Event(), FakeTime()
    time.gate = asyncio.Event()
    target = Crasher(1, stopping)
    supervised = supervise(target, stopping, time)
    task = asyncio.create_task(supervised.run())
    await wait_for(lambda: supervised.state is State.RESTARTING, message="restarting")
    reason = supervised.health_check()
    assert reason is not None and "boom 1" in reason and "1s" in reason
    snapshot = supervised.snapshot()
    assert snapshot["state"] == "restarting"
    assert snapshot["restarts"] == 1
    assert snapshot["backoff_seconds"] == 1
    assert snapshot["last_error"] == "RuntimeError: boom 1"
    assert snapshot["last_error_time"]
    time.gate.set()
    await wait_for(lambda: supervised.state is State.RUNNING and target.calls == 2, message="running again")
    assert supervised.health_check() is None
    stopping.set()
    await asyncio.wait_for(task, 5)


async def test_a_long_healthy_run_resets_the_backoff() -> None:
    stopping, time = asyncio.Event(), FakeTime()
    target = Crasher(4, stopping, time, long_from=3)  # runs 3 and 4 last a minute before crashing
    supervised = supervise(target, stopping, time)
    task = asyncio.create_task(supervised.run())
    await wait_for(lambda: target.calls == 5, message="fifth run")
    assert time.sleeps == [1, 2, 1, 1]
    stopping.set()
    await asyncio.wait_for(task, 5)


async def test_returning_before_shutdown_counts_as_a_crash() -> None:
    stopping, time = asyncio.Event(), FakeTime()
    calls = 0

    async def returns_once() -> None:
        nonlocal calls
        calls += 1
        if calls > 1:
            await stopping.wait()

    supervised = SupervisedController("quitter", returns_once, stopping, clock=time.clock, sleep=time.sleep)
    task = asyncio.create_task(supervised.run())
    await wait_for(lambda: calls == 2, message="second run")
    assert supervised.restarts == 1
    assert supervised.last_error == "run() returned before shutdown"
    stopping.set()
    await asyncio.wait_for(task, 5)


async def test_shutdown_interrupts_a_long_backoff() -> None:
    stopping = asyncio.Event()
    target = Crasher(100, stopping)
    supervised = SupervisedController("crasher", target.run, stopping, initial_backoff=3600)
    task = asyncio.create_task(supervised.run())
    await wait_for(lambda: supervised.state is State.RESTARTING, message="restarting")
    stopping.set()
    await asyncio.wait_for(task, 5)
    assert supervised.state is State.STOPPED
    assert target.calls == 1


async def test_a_crashing_controller_does_not_disturb_another() -> None:
    stopping, time = asyncio.Event(), FakeTime()
    crasher = Crasher(5, stopping)
    steady = Crasher(0, stopping)
    group = ControllerGroup(
        [supervise(crasher, stopping, time), SupervisedController("steady", steady.run, stopping)],
        remaining_grace=lambda: 5.0,
    )
    await group.start()
    await wait_for(lambda: crasher.calls == 6, message="crasher restarted five times")
    crashing, healthy = group.controllers
    assert crashing.restarts == 5
    assert steady.calls == 1
    assert healthy.state is State.RUNNING and healthy.restarts == 0
    stopping.set()
    await asyncio.wait_for(group.stop(), 5)
    assert all(c.state is State.STOPPED for c in group.controllers)


async def test_group_stop_drains_then_cancels_after_the_grace_period() -> None:
    stopping = asyncio.Event()
    drained: list[str] = []
    cancelled = asyncio.Event()
    release = asyncio.Event()

    async def cooperative() -> None:
        await release.wait()  # returns once drained

    async def stubborn() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def drain() -> None:
        drained.append("cooperative")
        release.set()

    group = ControllerGroup(
        [
            SupervisedController("cooperative", cooperative, stopping),
            SupervisedController("stubborn", stubborn, stopping),
        ],
        remaining_grace=lambda: 0.2,
        drains={"cooperative": drain},
    )
    await group.start()
    await wait_for(lambda: all(c.state is State.RUNNING for c in group.controllers), message="running")
    stopping.set()
    await asyncio.wait_for(group.stop(), 5)
    assert drained == ["cooperative"]
    assert cancelled.is_set()
    assert group.controllers[0].restarts == 0  # returning after stopping is not a crash


@pytest.mark.parametrize("crashes", [1, 3])
async def test_restart_metric_counts_crashes(crashes: int) -> None:
    from prometheus_client import REGISTRY

    def value() -> float:
        return REGISTRY.get_sample_value("aiokcm_controller_restarts_total", {"controller": "metered"}) or 0.0

    before = value()
    stopping, time = asyncio.Event(), FakeTime()
    target = Crasher(crashes, stopping)
    supervised = SupervisedController("metered", target.run, stopping, clock=time.clock, sleep=time.sleep)
    task = asyncio.create_task(supervised.run())
    await wait_for(lambda: target.calls == crashes + 1, message="recovered")
    assert value() - before == crashes
    stopping.set()
    await asyncio.wait_for(task, 5)


def test_snapshot_merges_the_controllers_own_view_and_survives_its_errors() -> None:
    async def idle() -> None:
        return None

    stopping = asyncio.Event()
    view = {"queue_depth": 3, "last_reconcile_error": "RuntimeError: x"}
    detailed = SupervisedController("detailed", idle, stopping, details=lambda: view)
    assert detailed.snapshot() == detailed.snapshot() | view
    assert detailed.snapshot()["state"] == "pending"

    def broken() -> dict[str, Any]:
        raise KeyError("gone")

    snapshot = SupervisedController("broken-view", idle, stopping, details=broken).snapshot()
    assert snapshot["name"] == "broken-view" and snapshot["details_error"] == "KeyError: 'gone'"


async def test_cut_short_ends_a_graceful_drain_at_once() -> None:
    """The lease was lost while draining: nothing may go on writing until the grace period ends."""
    stopping, cut_short = asyncio.Event(), asyncio.Event()
    cancelled = asyncio.Event()

    async def stubborn() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    group = ControllerGroup(
        [SupervisedController("stubborn", stubborn, stopping)],
        remaining_grace=lambda: 3600.0,
        cut_short=cut_short,
    )
    await group.start()
    await wait_for(lambda: group.controllers[0].state is State.RUNNING, message="running")
    stopping.set()
    stopper = asyncio.create_task(group.stop())
    await asyncio.sleep(0)  # yield: stop() is now waiting out the hour-long grace period
    assert not stopper.done()
    cut_short.set()
    await asyncio.wait_for(stopper, 5)
    assert cancelled.is_set()
