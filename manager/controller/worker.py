"""The reconcile workers of one controller, and the controller_runtime_* metrics.

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
import datetime
import functools
import itertools
import os
import time
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import structlog
from prometheus_client import Counter, Gauge, Histogram

from manager.client.writegate import WriteRefused
from manager.controller.cachesync import sync_problem, wait_for_sync
from manager.controller.reconcile import Request, Result, TerminalError
from manager.workqueue import QueueShutDown, RateLimitingQueue

if TYPE_CHECKING:
    from manager.controller.base import Controller

T = TypeVar("T", bound=Hashable)


RECONCILE_BUCKETS = (
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.15,
    0.2,
    0.25,
    0.3,
    0.35,
    0.4,
    0.45,
    0.5,
    0.6,
    0.7,
    0.8,
    0.9,
    1.0,
    1.25,
    1.5,
    1.75,
    2.0,
    2.5,
    3.0,
    3.5,
    4.0,
    4.5,
    5.0,
    6.0,
    7.0,
    8.0,
    9.0,
    10.0,
    15.0,
    20.0,
    25.0,
    30.0,
    40.0,
    50.0,
    60.0,
)
RESULTS = ("success", "error", "requeue", "requeue_after")

RECONCILE_TOTAL = Counter(
    "controller_runtime_reconcile", "Total number of reconciliations per controller", ["controller", "result"]
)
RECONCILE_ERRORS = Counter(
    "controller_runtime_reconcile_errors",
    "Total number of reconciliation errors per controller",
    ["controller"],
)
TERMINAL_ERRORS = Counter(
    "controller_runtime_terminal_reconcile_errors",
    "Total number of terminal reconciliation errors per controller",
    ["controller"],
)
RECONCILE_PANICS = Counter(
    "controller_runtime_reconcile_panics",
    "Total number of reconciliation panics per controller",
    ["controller"],
)
RECONCILE_TIME = Histogram(
    "controller_runtime_reconcile_time_seconds",
    "Length of time per reconciliation per controller",
    ["controller"],
    buckets=RECONCILE_BUCKETS,
)
MAX_CONCURRENT = Gauge(
    "controller_runtime_max_concurrent_reconciles",
    "Maximum number of concurrent reconciles per controller",
    ["controller"],
)
ACTIVE_WORKERS = Gauge(
    "controller_runtime_active_workers", "Number of currently used workers per controller", ["controller"]
)

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


@functools.cache
def _reconcile_time(controller: str) -> Any:
    """The controller's histogram child: labels() takes a lock and builds a tuple, once per reconcile."""
    return RECONCILE_TIME.labels(controller)


@functools.cache
def _reconcile_total(controller: str, result: str) -> Any:
    return RECONCILE_TOTAL.labels(controller, result)


def init_metrics(controller: str) -> None:
    """Pre-create every series of the controller at 0, as controller-runtime does."""
    for result in RESULTS:
        RECONCILE_TOTAL.labels(controller, result)
    RECONCILE_ERRORS.labels(controller)
    TERMINAL_ERRORS.labels(controller)
    RECONCILE_PANICS.labels(controller)
    RECONCILE_TIME.labels(controller)
    ACTIVE_WORKERS.labels(controller)


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


async def worker(ctl: Controller) -> None:
    queue = ctl.queue
    active = ACTIVE_WORKERS.labels(ctl.name)
    stopping = ctl.ctx.stopping
    while True:
        try:
            request = await queue.get()
        except QueueShutDown:
            return
        if stopping.is_set():  # shutting down: leave the backlog
            queue.done(request)
            return
        active.inc()
        refused: WriteRefused | None = None
        try:
            await process(ctl, request)
        except asyncio.CancelledError:
            queue.add(request)  # interrupted mid-reconcile: it runs again after a restart
            raise
        except WriteRefused as exc:
            queue.add(request)  # not done: whoever leads next reconciles it (from its own queue)
            refused = exc
        finally:
            active.dec()
            queue.done(request)
        if refused is not None:
            await _idle_while_refused(ctl, refused)
            return


async def process(ctl: Controller, request: Request) -> None:
    """One reconcile and what its outcome means for the key."""
    name = ctl.name
    queue = ctl.queue
    # bind + reset by token rather than bound_contextvars(): that one copies the whole context to save
    # the keys it overwrites, and re-binds them after, on every reconcile; a token restores them as well.
    tokens = structlog.contextvars.bind_contextvars(
        controller=name, key=request.key, reconcile_id=f"{_RUN_PREFIX}-{next(_RECONCILE_IDS):x}"
    )
    try:
        start = time.perf_counter()
        ctl.stats.reconciles += 1
        try:
            result = await ctl.reconcile(request)
        except asyncio.CancelledError as cancelled:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise  # we are being stopped
            # A CancelledError leaking out of the reconcile (say, from a task it awaited) must not end
            # this worker: treat it as a failure of this key.
            _reconcile_time(name).observe(time.perf_counter() - start)
            _failed(ctl, request, RuntimeError(f"reconcile raised CancelledError: {cancelled}"))
            return
        except WriteRefused:
            _reconcile_time(name).observe(time.perf_counter() - start)
            _reconcile_total(name, "requeue").inc()
            raise  # not an error of the reconcile: the worker stops acting
        except Exception as exc:
            _reconcile_time(name).observe(time.perf_counter() - start)
            _failed(ctl, request, exc)
            return
        _reconcile_time(name).observe(time.perf_counter() - start)
        if result is not None and not isinstance(result, Result):  # a bug in the reconcile, not the worker's
            _failed(ctl, request, TypeError(f"reconcile returned {type(result).__name__}, not Result | None"))
            return
        if result is not None and result.requeue_after is not None and result.requeue_after > 0:
            queue.forget(request)
            queue.add_after(request, result.requeue_after)
            _reconcile_total(name, "requeue_after").inc()
        elif result is not None and result.requeue:
            queue.add_rate_limited(request)
            _reconcile_total(name, "requeue").inc()
        else:
            queue.forget(request)
            _reconcile_total(name, "success").inc()
    finally:
        structlog.contextvars.reset_contextvars(**tokens)


def _failed(ctl: Controller, request: Request, exc: Exception) -> None:

    name = ctl.name
    RECONCILE_ERRORS.labels(name).inc()
    RECONCILE_TOTAL.labels(name, "error").inc()
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
