"""The reconcile workers of one controller (their metrics: manager/controller/metrics.py).

Each worker pops a key, calls `reconcile` with structlog context (controller, key, reconcile_id) bound,
and settles the key from the outcome (controller-runtime's reconcileHandler). Nothing a reconcile raises
(apart from cancellation) escapes a worker: a worker that died would silently shrink the controller.

A write refused by the client's write gate (`WriteRefused`, e.g. `NotLeader` once the leader lease may
have expired) is not a reconcile error: the key goes back to the queue and the worker stops taking keys
until the manager stops (it exits on a lost lease), so a closed fence causes neither error logs nor a
storm of doomed retries.
"""

from __future__ import annotations

import asyncio
import contextvars
import datetime
import itertools
import os
import time
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import structlog

from manager.client.writegate import WriteRefused
from manager.controller.cachesync import sync_problem, wait_for_sync
from manager.controller.metrics import (
    MAX_CONCURRENT,
    RECONCILE_ERRORS,
    RECONCILE_PANICS,
    RECONCILES,
    TERMINAL_ERRORS,
    init_metrics,
)
from manager.controller.reconcile import Request, Result, TerminalError
from manager.workqueue import QueueShutDown, RateLimitingQueue

if TYPE_CHECKING:
    from manager.controller.base import Controller

T = TypeVar("T", bound=Hashable)


# Exceptions that mean a bug in the reconcile rather than a failure it anticipates (an API error, a timeout):
# they are counted in controller_runtime_reconcile_panics_total as well, like a recovered Go panic.
PROGRAMMING_ERRORS: tuple[type[BaseException], ...] = (
    AssertionError,
    AttributeError,
    LookupError,
    NameError,
    TypeError,
    ValueError,
    ArithmeticError,
    RecursionError,
    NotImplementedError,
)

# reconcile_id: unique per process run without a urandom read per reconcile.
_RUN_PREFIX = os.urandom(4).hex()
_RECONCILE_IDS = itertools.count(1)
DEBUG_MAX_KEYS = 20


@dataclass
class ReconcileStats:
    """What /debug/controllers shows about one controller's reconciles (the metrics have the rest)."""

    workers_started: bool = False
    waiting_for_sync: bool = False
    reconciles: int = 0
    errors: int = 0
    last_error: str | None = None
    last_error_key: str | None = None
    last_error_time: str | None = None


def debug_state(ctl: Controller) -> dict[str, Any]:
    """A JSON-able view of the controller for /debug/controllers."""
    stats = ctl.stats
    queue = ctl.queue
    return {
        "workers": ctl.workers(),
        "workers_started": stats.workers_started,
        "informers_synced": all(r.has_synced() for r in ctl.registrations()),
        "waiting_for_sync": sync_problem(ctl),
        "queue_depth": len(queue),
        "queue_waiting": queue.waiting,
        "in_flight": sorted(str(request) for request in queue.processing)[:DEBUG_MAX_KEYS],
        "reconciles": stats.reconciles,
        "reconcile_errors": stats.errors,
        "last_reconcile_error": stats.last_error,
        "last_reconcile_error_key": stats.last_error_key,
        "last_reconcile_error_time": stats.last_error_time,
    }


async def run_workers(ctl: Controller) -> None:
    """Run the controller's workers until cancelled (or until its queue shuts down and drains)."""
    log = ctl.log
    init_metrics(ctl.name)
    await wait_for_sync(ctl)
    count = ctl.workers()
    MAX_CONCURRENT.labels(ctl.name).set(count)
    log.info("starting workers", workers=count)
    stopping = ctl.ctx.stopping
    ctl.stats.workers_started = True
    try:
        async with asyncio.TaskGroup() as group:
            workers = [group.create_task(worker(ctl), name=f"{ctl.name}-worker-{i}") for i in range(count)]
            group.create_task(_stop_when_stopping(ctl.queue, stopping, workers))
    finally:
        ctl.stats.workers_started = False
        log.info("workers stopped")


async def _stop_when_stopping(
    queue: RateLimitingQueue[Any], stopping: asyncio.Event, workers: list[asyncio.Task[None]]
) -> None:
    """Shutdown began: take no new keys; workers finish their current item and return."""
    waiter = asyncio.ensure_future(stopping.wait())
    try:
        done, _ = await asyncio.wait([waiter, *workers], return_when=asyncio.FIRST_COMPLETED)
        if waiter in done:
            queue.shut_down()
    finally:
        waiter.cancel()


async def run_queue(
    ctl: Controller,
    queue: RateLimitingQueue[T],
    handler: Callable[[T], Awaitable[None]],
    workers: int = 1,
) -> None:
    """Run `workers` workers on one of the controller's secondary queues until cancelled, the queue shuts
    down, or the manager begins stopping. Each awaits `handler(item)`: success forgets the item's failures,
    an exception retries it through the queue's rate limiter (logged at warning)."""
    await wait_for_sync(ctl)
    async with asyncio.TaskGroup() as group:
        tasks = [
            group.create_task(_queue_worker(ctl, queue, handler), name=f"{queue.name or ctl.name}-worker-{i}")
            for i in range(workers)
        ]
        group.create_task(_stop_when_stopping(queue, ctl.ctx.stopping, tasks))


async def _queue_worker(
    ctl: Controller, queue: RateLimitingQueue[T], handler: Callable[[T], Awaitable[None]]
) -> None:
    while True:
        try:
            item = await queue.get()
        except QueueShutDown:
            return
        refused: WriteRefused | None = None
        try:
            await handler(item)
        except asyncio.CancelledError:
            queue.add(item)  # interrupted: it runs again after a restart
            raise
        except WriteRefused as exc:
            queue.add(item)
            refused = exc
        except Exception as exc:
            queue.add_rate_limited(item)
            ctl.log.warning(
                "queue item failed",
                queue=queue.name or ctl.name,
                item=str(item),
                error=f"{type(exc).__name__}: {exc}",
                requeues=queue.num_requeues(item),
            )
        else:
            queue.forget(item)
        finally:
            queue.done(item)
        if refused is not None:
            await _idle_while_refused(ctl, refused)
            return


async def _idle_while_refused(ctl: Controller, refused: WriteRefused) -> None:
    """Writes are refused for good (the fence stays closed): take no more keys until the manager stops."""
    ctl.log.info("writes refused: worker idle until the manager stops", reason=str(refused))
    await ctl.ctx.stopping.wait()


def _log_vars() -> tuple[contextvars.ContextVar[Any], contextvars.ContextVar[Any]]:
    """structlog's ContextVars behind the `key` and `reconcile_id` log keys (bound and restored at once: only
    the variables are wanted, to set them directly on the hot path)."""
    tokens = structlog.contextvars.bind_contextvars(key=None, reconcile_id=None)
    structlog.contextvars.reset_contextvars(**tokens)
    return tokens["key"].var, tokens["reconcile_id"].var


async def worker(ctl: Controller) -> None:
    """Take keys and reconcile them, one at a time, until the queue shuts down or the manager stops.

    One coroutine for the whole loop (a reconcile is not wrapped in a coroutine of its own: every wake-up
    of the reconcile would pass through it, and it would be one more object per reconcile)."""
    queue = ctl.queue
    series = RECONCILES.series(ctl.name)
    observe = series.time.observe
    results = series.results
    stats = ctl.stats
    stopping = ctl.ctx.stopping
    perf_counter = time.perf_counter
    # The log context of a reconcile: `controller` is bound once, in this worker task's own context (a copy
    # of its parent's) for the task's life; `key` and `reconcile_id` per reconcile by setting and resetting
    # their ContextVars directly: bind_contextvars/reset_contextvars would build the variable names, a kwargs
    # dict and a token dict on every reconcile (several times the cost). Same log lines either way.
    bound = structlog.contextvars.bind_contextvars(controller=ctl.name)
    key_var, id_var = _log_vars()
    try:
        while True:
            try:
                request = await queue.get()
            except QueueShutDown:
                return
            if stopping.is_set():  # shutting down: leave the backlog
                queue.done(request)
                return
            series.active += 1
            refused: WriteRefused | None = None
            key_token = key_var.set(request.key)
            id_token = id_var.set(f"{_RUN_PREFIX}-{next(_RECONCILE_IDS):x}")
            start = perf_counter()
            stats.reconciles += 1
            try:
                result = await ctl.reconcile(request)
            except asyncio.CancelledError as cancelled:
                current = asyncio.current_task()
                if current is not None and current.cancelling():
                    queue.add(request)  # interrupted mid-reconcile: it runs again after a restart
                    raise  # we are being stopped
                # A CancelledError leaking out of the reconcile (say, from a task it awaited) must not end
                # this worker: treat it as a failure of this key.
                observe(perf_counter() - start)
                _failed(ctl, request, RuntimeError(f"reconcile raised CancelledError: {cancelled}"))
            except WriteRefused as exc:  # not an error of the reconcile: the worker stops acting
                observe(perf_counter() - start)
                results["requeue"] += 1
                queue.add(request)  # not done: whoever leads next reconciles it (from its own queue)
                refused = exc
            except Exception as exc:
                observe(perf_counter() - start)
                _failed(ctl, request, exc)
            else:
                observe(perf_counter() - start)
                if result is None:
                    queue.forget(request)
                    results["success"] += 1
                else:
                    _settle(ctl, request, result)
            finally:
                id_var.reset(id_token)
                key_var.reset(key_token)
                series.active -= 1
                queue.done(request)
            if refused is not None:
                await _idle_while_refused(ctl, refused)
                return
    finally:
        structlog.contextvars.reset_contextvars(**bound)


def _settle(ctl: Controller, request: Request, result: object) -> None:
    """What a reconcile's Result means for the key (None, the usual result, is handled inline)."""
    queue = ctl.queue
    results = RECONCILES.series(ctl.name).results
    if not isinstance(result, Result):  # a bug in the reconcile, not the worker's
        _failed(ctl, request, TypeError(f"reconcile returned {type(result).__name__}, not Result | None"))
    elif result.requeue_after is not None and result.requeue_after > 0:
        queue.forget(request)
        queue.add_after(request, result.requeue_after)
        results["requeue_after"] += 1
    elif result.requeue:
        queue.add_rate_limited(request)
        results["requeue"] += 1
    else:
        queue.forget(request)
        results["success"] += 1


def _failed(ctl: Controller, request: Request, exc: Exception) -> None:
    """Count and log a failed reconcile; requeue its key through the rate limiter unless terminal."""
    name = ctl.name
    RECONCILE_ERRORS.labels(name).inc()
    RECONCILES.series(name).results["error"] += 1
    stats = ctl.stats
    stats.errors += 1
    stats.last_error = f"{type(exc).__name__}: {exc}"
    stats.last_error_key = request.key
    stats.last_error_time = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    if isinstance(exc, TerminalError):
        TERMINAL_ERRORS.labels(name).inc()
        ctl.queue.forget(request)
        ctl.log.error("terminal reconciler error, not retried", error=str(exc), exc_info=exc)
        return
    if isinstance(exc, PROGRAMMING_ERRORS):
        RECONCILE_PANICS.labels(name).inc()
    ctl.queue.add_rate_limited(request)
    ctl.log.error(
        "reconciler error",
        error=f"{type(exc).__name__}: {exc}",
        requeues=ctl.queue.num_requeues(request),
        exc_info=exc,
    )
