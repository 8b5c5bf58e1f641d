"""The Manager: owns every long-lived piece of the process and starts and stops them in a fixed order.

Runnables live in four groups, started in this order and stopped in the reverse one (as controller-runtime's
runnable groups): ``SERVER`` (the health/metrics server) → ``CACHES`` (informers; ``start()`` returns once
synced) → ``LEADER_ELECTION`` (``start()`` returns once the lease is held) → ``CONTROLLERS`` (the supervised
controller loops). Within a group runnables start in the order they were added.

The seam for the cluster wiring (client, informers, leader election, richer controller context)
------------------------------------------------------------------------------------------------
The ``install`` argument (``manager.lifecycle.cluster.install`` when the command line builds the manager)
is awaited once, before any controller is constructed or any group started. There it may:

* ``manager.add_runnable(Group.CACHES, informer_factory)`` and
  ``manager.add_runnable(Group.LEADER_ELECTION, elector)``: any object with ``async start()`` (return when
  ready for the next group) and ``async stop()`` (idempotent; also called when ``start()`` was interrupted);
* ``manager.context_factory = build`` where ``build(info, base) -> ctx`` turns the :class:`BaseContext`
  built for each controller (``settings``, ``health``, ``logger`` bound to ``controller=<name>``,
  ``stopping``) into the object passed to ``cls(ctx)`` (e.g. a ControllerContext with ``client``,
  ``informers`` and ``events`` added);
* ``manager.add_shutdown_hook(client.close)``: coroutines run last, after every group stopped;
* ``manager.health.add(...)`` and ``manager.lifecycle.server.add_get(...)`` for extra checks and debug pages;
* ``manager.request_shutdown(reason, exit_code=1, graceful=False)`` when the lease is lost.

Controller instances are built after ``install`` and before any group starts: ``cls(ctx)``, then the
optional ``setup()`` (register informer handlers so they see the initial list). The supervisor calls
``run()`` (again after a crash, on the same instance); at shutdown the optional ``async drain()`` is called
so ``run()`` can return once in-flight work is done. A class with ``need_leader_election = False`` starts
right after the caches (also on standby replicas) instead of after the lease is acquired.

``manager.controllers`` (the enabled ControllerInfo list) is known by then, so the cluster wiring can skip
building an API client when no controller needs one: the shell itself never talks to an API server.

Shutdown: the first SIGTERM/SIGINT turns readiness false (the ``shutdown`` readyz check), sets ``stopping``
(controllers stop taking new work and finish what is in flight), waits up to ``--shutdown-grace-period`` for
the controller loops to return and cancels the rest, then stops the groups in reverse order, runs the shutdown
hooks and returns exit code 0. A second signal exits at once with exit code 1.
"""

from __future__ import annotations

import asyncio
import enum
import functools
import inspect
import os
import signal
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import structlog

from manager.config.settings import Settings
from manager.lifecycle.descriptor import ControllerInfo
from manager.lifecycle.healthz import HealthChecks
from manager.lifecycle.server import HttpServer
from manager.lifecycle.slot import ControllerSlot
from manager.lifecycle.supervisor import ControllerGroup, Sleep, SupervisedController

if TYPE_CHECKING:
    from manager.lifecycle.cluster import Cluster

log = structlog.get_logger(__name__)

SECOND_SIGNAL_EXIT_CODE = 1


class Group(enum.IntEnum):
    SERVER = 0
    CACHES = 1
    LEADER_ELECTION = 2
    CONTROLLERS = 3


class Runnable(Protocol):
    async def start(self) -> None: ...
    async def stop(self) -> None: ...


@dataclass
class BaseContext:
    """What every controller receives at least; the cluster wiring's ControllerContext extends it."""

    settings: Settings
    health: HealthChecks
    logger: Any  # structlog BoundLogger bound with controller=<name>
    stopping: asyncio.Event  # set when shutdown begins: take no new work, finish what is in flight


ContextFactory = Callable[[ControllerInfo, BaseContext], Any]
# Wires the process to a cluster before controllers are built (manager.lifecycle.cluster.install).
Installer = Callable[["Manager"], Awaitable[None] | None]


class Manager:
    """Owns the server, the cluster wiring's runnables and the supervised controllers of one process."""

    def __init__(
        self,
        settings: Settings,
        controllers: Sequence[ControllerInfo] = (),
        *,
        install: Installer | None = None,
        clock: Callable[[], float] | None = None,
        sleep: Sleep | None = None,
    ) -> None:
        self.settings = settings
        self.controllers = list(controllers)
        self.health = HealthChecks()
        self.stopping = asyncio.Event()
        self.shutting_down = False
        self.exit_code = 0
        self.context_factory: ContextFactory = lambda info, base: base
        # What `install` wired up (manager.lifecycle.cluster.Cluster), kept for debugging and tests.
        self.cluster: Cluster | None = None
        self.supervised: list[SupervisedController] = []
        self.server = HttpServer.from_settings(self.health, settings, self.debug_controllers)
        self._install = install
        self._supervisor_timing: dict[str, Any] = {
            key: value for key, value in (("clock", clock), ("sleep", sleep)) if value is not None
        }
        self._groups: dict[Group, list[Runnable]] = {group: [] for group in Group}
        self._started: list[Runnable] = []
        self._shutdown_hooks: list[Callable[[], Awaitable[Any]]] = []
        self._shutdown_requested = asyncio.Event()
        self._signals_seen = 0
        self._grace_override: float | None = None
        self._cut_short = asyncio.Event()  # a non-graceful stop: controllers are cancelled at once
        self._shutdown_started: float | None = None
        self.health.add("ping", lambda: None)
        self.health.add("shutdown", self._shutdown_check, healthz=False, livez=False)
        self.add_runnable(Group.SERVER, self.server)

    # ---- the seam -------------------------------------------------------------------------------------
    def add_runnable(self, group: Group, runnable: Runnable) -> None:
        self._groups[group].append(runnable)

    def add_shutdown_hook(self, hook: Callable[[], Awaitable[Any]]) -> None:
        self._shutdown_hooks.append(hook)

    def request_shutdown(self, reason: str, exit_code: int = 0, graceful: bool = True) -> None:
        """Begin shutdown (idempotent). A non-graceful one skips the grace period, e.g. on lost leadership."""
        if exit_code and not self.exit_code:
            self.exit_code = exit_code
        if not graceful:
            self._grace_override = 0.0
            self._cut_short.set()  # also ends a graceful drain already under way
        if self._shutdown_requested.is_set():
            return
        log.info("shutdown requested", reason=reason)
        self._shutdown_started = time.monotonic()
        self.shutting_down = True
        self.stopping.set()
        self._shutdown_requested.set()

    def remaining_grace(self) -> float:
        """Seconds in-flight work may still take: the grace period counts from the shutdown request."""
        if self._grace_override is not None:
            return self._grace_override
        grace = self.settings.shutdown_grace_period
        if self._shutdown_started is None:
            return grace
        return max(0.0, grace - (time.monotonic() - self._shutdown_started))

    def debug_controllers(self) -> dict[str, Any]:
        return {"controllers": [controller.snapshot() for controller in self.supervised]}

    # ---- lifecycle --------------------------------------------------------------------------------------
    async def run(self, handle_signals: bool = True) -> int:
        """Start everything, wait for a shutdown request, stop everything; returns the exit code."""
        loop = asyncio.get_running_loop()
        if handle_signals:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, self._on_signal, sig)
        try:
            startup = asyncio.create_task(self._start(), name="manager-startup")
            requested = asyncio.create_task(self._shutdown_requested.wait())
            await asyncio.wait({startup, requested}, return_when=asyncio.FIRST_COMPLETED)
            if not startup.done():
                startup.cancel()
            try:
                await startup
            except asyncio.CancelledError:
                if not self._shutdown_requested.is_set():
                    raise  # run() itself was cancelled
                log.info("startup interrupted by shutdown")
            except BaseException:
                self.request_shutdown("startup failed", exit_code=1, graceful=False)
                raise
            await requested
        finally:
            self.request_shutdown("stopping")
            await self._stop_all()
            if handle_signals:
                for sig in (signal.SIGTERM, signal.SIGINT):
                    loop.remove_signal_handler(sig)
        log.info("manager stopped", exit_code=self.exit_code)
        return self.exit_code

    async def _start(self) -> None:
        await self._install_cluster()
        self._build_controllers()
        if self.settings.leader_elect and not self._groups[Group.LEADER_ELECTION]:
            log.warning("--leader-elect is on but no leader election is installed; controllers run unguarded")
        for group in Group:
            for runnable in self._groups[group]:
                self._started.append(runnable)  # stop() is owed even if start() is interrupted
                await runnable.start()
            if group is Group.SERVER:
                log.info(
                    "manager starting",
                    version=_version(),
                    event_loop=_loop_name(),
                    controllers=[c.name for c in self.controllers],
                    address=f"{self.server.host}:{self.server.port}",
                )
        log.info("manager started")

    async def _install_cluster(self) -> None:
        if self._install is None:
            log.debug("no cluster wiring installed: controllers get a minimal context")
            return
        result = self._install(self)
        if inspect.isawaitable(result):
            await result

    def _build_controllers(self) -> None:
        """Construct each controller as ``cls(ctx)``, call its optional ``setup()`` (register informer
        handlers before caches start) and place it in its group: controllers whose class says
        ``need_leader_election = False`` start after the caches, the others after the lease is held. One whose
        construction or setup raises is built again by its supervisor, with backoff (lifecycle.slot)."""
        standby: list[SupervisedController] = []
        leader_only: list[SupervisedController] = []
        drains: dict[str, Callable[[], Awaitable[None]]] = {}
        for info in self.controllers:
            base = BaseContext(self.settings, self.health, log.bind(controller=info.name), self.stopping)
            slot = ControllerSlot(info.name, functools.partial(self._construct, info, base))
            slot.try_build()
            supervised = SupervisedController(
                info.name,
                slot.run,
                self.stopping,
                **self._supervisor_timing,
                details=slot.details,
                waiting=slot.sync_problem,
            )
            drains[info.name] = slot.drain
            self.supervised.append(supervised)
            (leader_only if getattr(info.cls, "need_leader_election", True) else standby).append(supervised)
            # Not in livez: the supervisor restarts the loop itself; restarting the process adds nothing.
            self.health.add(info.name, supervised.health_check, livez=False)
        if standby:
            self.add_runnable(
                Group.CACHES, ControllerGroup(standby, self.remaining_grace, drains, self._cut_short)
            )
        self.add_runnable(
            Group.CONTROLLERS, ControllerGroup(leader_only, self.remaining_grace, drains, self._cut_short)
        )

    def _construct(self, info: ControllerInfo, base: BaseContext) -> Any:
        instance = info.cls(self.context_factory(info, base))
        setup = getattr(instance, "setup", None)
        if callable(setup):
            setup()
        return instance

    async def _stop_all(self) -> None:
        for runnable in reversed(self._started):
            try:
                await runnable.stop()
            except Exception:
                log.exception("error while stopping", runnable=type(runnable).__name__)
        self._started.clear()
        for hook in reversed(self._shutdown_hooks):
            try:
                await hook()
            except Exception:
                log.exception("error in shutdown hook", hook=getattr(hook, "__qualname__", repr(hook)))
        self._shutdown_hooks.clear()

    def _shutdown_check(self) -> str | None:
        return "shutting down" if self.shutting_down else None

    def _on_signal(self, sig: signal.Signals) -> None:
        self._signals_seen += 1
        if self._signals_seen > 1:
            log.error("second signal: exiting now", signal=sig.name, exit_code=SECOND_SIGNAL_EXIT_CODE)
            os._exit(SECOND_SIGNAL_EXIT_CODE)
        self.request_shutdown(f"received {sig.name}")


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("aiokcm")
    except PackageNotFoundError:
        return "unknown"


def _loop_name() -> str:
    """`uvloop` or `asyncio`: the implementation running this loop (`--event-loop`)."""
    return type(asyncio.get_running_loop()).__module__.partition(".")[0]
