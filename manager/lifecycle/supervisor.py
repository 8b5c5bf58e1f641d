"""Supervision of controller loops: one asyncio task per controller, restarted with backoff when it dies.

An exception escaping ``run()`` means the controller's loop died: it is logged and counted, the controller's
health check fails, and ``run()`` is called again on the same instance after 1 s, then 2 s, 4 s ... capped at
60 s. A run that lasted at least ``reset_after`` seconds resets the delay to the initial one. ``run()``
returning before shutdown is treated like a crash (a controller loop is meant to block until told to stop).
Other controllers are never disturbed. Clock and sleep are injectable so tests need no real waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import enum
import time
from collections.abc import Awaitable, Callable
from typing import Any

import structlog
from prometheus_client import Counter

log = structlog.get_logger(__name__)

CONTROLLER_RESTARTS = Counter(
    "aiokcm_controller_restarts_total",
    "Times a controller's loop died with an exception and was scheduled for restart.",
    ["controller"],
)

Sleep = Callable[[float], Awaitable[None]]


class State(enum.StrEnum):
    PENDING = "pending"  # not started yet (e.g. waiting for the leader lease)
    RUNNING = "running"
    RESTARTING = "restarting"  # died; waiting out the backoff before run() is called again
    STOPPED = "stopped"


class SupervisedController:
    """Runs ``target()`` until shutdown, restarting it with exponential backoff when it fails."""

    def __init__(
        self,
        name: str,
        target: Callable[[], Awaitable[None]],
        stopping: asyncio.Event,
        *,
        initial_backoff: float = 1.0,
        max_backoff: float = 60.0,
        reset_after: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Sleep = asyncio.sleep,
        details: Callable[[], dict[str, Any]] | None = None,
        waiting: Callable[[], str | None] | None = None,
    ) -> None:
        self.name = name
        self._details = details  # the controller's own view (queue, workers, last reconcile error)
        self._waiting = waiting  # why a running controller's workers have not started (unsynced informers)
        self._target = target
        self._stopping = stopping
        self._initial_backoff = initial_backoff
        self._max_backoff = max_backoff
        self._reset_after = reset_after
        self._clock = clock
        self._sleep = sleep
        self.state = State.PENDING
        self.restarts = 0
        self.last_error: str | None = None
        self.last_error_time: str | None = None
        self.backoff_seconds: float | None = None  # the delay being waited out, while RESTARTING
        self._log = log.bind(controller=name)

    def health_check(self) -> str | None:
        """Fails while the loop is down, or running but waiting for its informers (a CRD not installed
        yet); pending and stopped controllers are not unhealthy."""
        if self.state is State.RESTARTING:
            return (
                f"controller {self.name} is down after {self.restarts} crash(es), "
                f"restarting in {self.backoff_seconds:g}s; last error: {self.last_error}"
            )
        if self.state is State.RUNNING and self._waiting is not None:
            reason = self._waiting()
            return f"controller {self.name} is {reason}" if reason else None
        return None

    def snapshot(self) -> dict[str, Any]:
        snapshot: dict[str, Any] = {
            "name": self.name,
            "state": str(self.state),
            "restarts": self.restarts,
            "last_error": self.last_error,
            "last_error_time": self.last_error_time,
            "backoff_seconds": self.backoff_seconds,
        }
        if self._details is not None:
            try:
                snapshot.update(self._details())
            except Exception as exc:  # a debug page must never fail because one controller's view did
                snapshot["details_error"] = f"{type(exc).__name__}: {exc}"
        return snapshot

    async def run(self) -> None:
        delay = self._initial_backoff
        try:
            while not self._stopping.is_set():
                self.state = State.RUNNING
                self.backoff_seconds = None
                started = self._clock()
                try:
                    await self._target()
                except Exception as exc:
                    error: BaseException | str = exc
                else:
                    if self._stopping.is_set():
                        break
                    error = "run() returned before shutdown"
                if self._stopping.is_set():
                    self._log.warning("controller failed while stopping", error=str(error))
                    break
                if self._clock() - started >= self._reset_after:
                    delay = self._initial_backoff
                self._record_crash(error, delay)
                await self._sleep_unless_stopping(delay)
                delay = min(delay * 2, self._max_backoff)
        finally:
            self.state = State.STOPPED
            self.backoff_seconds = None

    def _record_crash(self, error: BaseException | str, delay: float) -> None:
        self.restarts += 1
        self.last_error = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
        self.last_error_time = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        self.state = State.RESTARTING
        self.backoff_seconds = delay
        CONTROLLER_RESTARTS.labels(self.name).inc()
        self._log.error(
            "controller loop died; restarting after backoff",
            restarts=self.restarts,
            backoff_seconds=delay,
            exc_info=error if isinstance(error, BaseException) else None,
            error=None if isinstance(error, BaseException) else error,
        )

    async def _sleep_unless_stopping(self, delay: float) -> None:
        sleeper = asyncio.ensure_future(self._sleep(delay))
        stopper = asyncio.ensure_future(self._stopping.wait())
        try:
            await asyncio.wait({sleeper, stopper}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (sleeper, stopper):
                task.cancel()
            for task in (sleeper, stopper):
                with contextlib.suppress(asyncio.CancelledError):
                    await task


class ControllerGroup:
    """The runnable that starts supervised controllers and drains them on shutdown.

    ``drains`` maps a controller name to its optional graceful-stop coroutine (e.g. ``Controller.drain``:
    refuse new keys, finish in-flight ones, let ``run()`` return); it is called when the group stops.
    ``remaining_grace`` says how long the loops may still take before they are cancelled; ``cut_short``, once
    set (the leader lease was lost during the drain), ends the wait at once: nothing may keep writing then.
    """

    def __init__(
        self,
        controllers: list[SupervisedController],
        remaining_grace: Callable[[], float],
        drains: dict[str, Callable[[], Awaitable[None]]] | None = None,
        cut_short: asyncio.Event | None = None,
    ) -> None:
        self.controllers = controllers
        self._remaining_grace = remaining_grace
        self._drains = drains or {}
        self._cut_short = cut_short or asyncio.Event()
        self._tasks: dict[str, asyncio.Task[None]] = {}

    async def start(self) -> None:
        for controller in self.controllers:
            task = asyncio.create_task(controller.run(), name=f"controller:{controller.name}")
            self._tasks[controller.name] = task
        if self.controllers:
            log.info("controllers started", controllers=[c.name for c in self.controllers])

    async def stop(self) -> None:
        """Drain, wait up to the remaining grace period for loops to return, then cancel the rest."""
        running = {name: task for name, task in self._tasks.items() if not task.done()}
        if not running:
            return
        grace = self._remaining_grace()
        log.info("waiting for controllers to finish in-flight work", grace_period_seconds=round(grace, 3))
        drains = [
            asyncio.create_task(self._drain(name, drain), name=f"drain:{name}")
            for name, drain in self._drains.items()
            if name in running
        ]
        late = await self._wait(set(running.values()), None if grace < 0 else grace)  # <0: forever
        if late:
            names = sorted(task.get_name().removeprefix("controller:") for task in late)
            log.warning("grace period over; cancelling controllers", controllers=names)
            for task in late:
                task.cancel()
            await asyncio.wait(late)
        for task in drains:
            task.cancel()
        if drains:
            await asyncio.wait(drains)

    async def _wait(self, tasks: set[asyncio.Task[None]], timeout: float | None) -> set[asyncio.Task[None]]:
        """Wait for `tasks` until `timeout` or `cut_short`; returns the ones still running."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        cut = asyncio.ensure_future(self._cut_short.wait())
        pending = {task for task in tasks if not task.done()}
        try:
            while pending and not cut.done():
                remaining = None if deadline is None else deadline - loop.time()
                if remaining is not None and remaining <= 0:
                    break
                await asyncio.wait({*pending, cut}, timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
                pending = {task for task in pending if not task.done()}
        finally:
            cut.cancel()
        return pending

    async def _drain(self, name: str, drain: Callable[[], Awaitable[None]]) -> None:
        try:
            await drain()
        except Exception:
            log.exception("controller drain failed", controller=name)
