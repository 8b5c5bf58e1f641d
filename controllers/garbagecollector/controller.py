"""The garbage collector controller (upstream: pkg/controller/garbagecollector/garbagecollector.go `Run`,
`Sync`; cmd/kube-controller-manager/app/core.go `startGarbageCollectorController`).

`run()` starts three things on the controller's loop: the graph builder consuming
`garbage_collector_graph_changes`; the discovery loop, which every `resync_period` (30 s) lists the
deletable resources and adds or removes monitors; and, once the monitors have synced or
`initial_sync_timeout` (30 s) has passed, `--concurrent-gc-syncs` workers on each of
`garbage_collector_attempt_to_delete` and `garbage_collector_attempt_to_orphan`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

from pydantic import Field

from controllers.garbagecollector.builder import GraphBuilder
from controllers.garbagecollector.collector import Collector
from controllers.garbagecollector.graph import Node
from controllers.garbagecollector.metrics import RESOURCES_SYNC_ERRORS
from controllers.garbagecollector.monitors import Monitors
from controllers.garbagecollector.operations import Operations
from controllers.garbagecollector.resources import RestMapper, deletable_resources, gv_of
from manager import (
    Controller,
    ControllerContext,
    ControllerFlags,
    GroupVersionResource,
    PolicyRule,
    QueueShutDown,
    RateLimitingQueue,
    default_controller_rate_limiter,
    discover_resources,
)

_SYNC_POLL = 0.05


class GarbageCollectorFlags(ControllerFlags):
    """garbage-collector-controller's flags (kube-controller-manager's GarbageCollectorControllerOptions)."""

    concurrent_gc_syncs: int = Field(
        20,
        ge=0,  # upstream validates nothing: 0 builds the graph and collects nothing
        description="The number of garbage collector workers that are allowed to sync concurrently.",
    )
    enable_garbage_collector: bool = Field(
        True,
        description="Enables the generic garbage collector. MUST be synced with the corresponding flag of "
        "the kube-apiserver.",
    )


class GarbageCollectorController(Controller):
    name = "garbage-collector-controller"
    aliases = ("garbagecollector",)
    enabled_by_default = True
    flags = GarbageCollectorFlags
    concurrency = "concurrent_gc_syncs"
    # The base class's key queue is unused; naming it like the attempt-to-delete queue keeps a stray
    # `workqueue_*{name="garbage_collector"}` series out of the metrics.
    queue_name = "garbage_collector_attempt_to_delete"
    # Metadata informers on every deletable resource, gets before acting, patches of ownerReferences and
    # finalizers, deletes of dependents (the event sender's rules are the manager's, not repeated here).
    rbac = (PolicyRule(("*",), ("*",), ("get", "list", "watch", "patch", "delete")),)
    need_leader_election = True
    resync_period: ClassVar[float] = 30.0  # core.go: how often discovery is read again
    initial_sync_timeout: ClassVar[float] = 30.0  # how long the workers wait for the monitors at start

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.mapper = RestMapper()
        self.runs = 0
        self.collecting = False  # the workers have started
        self._new_state()

    def _new_state(self) -> None:
        """The queues and the graph of one run(): a run restarted after a crash rebuilds the graph from the
        informers rather than trusting one that may have missed events."""
        self.attempt_to_delete: RateLimitingQueue[Node] = RateLimitingQueue(
            "garbage_collector_attempt_to_delete", rate_limiter=default_controller_rate_limiter()
        )
        self.attempt_to_orphan: RateLimitingQueue[Node] = RateLimitingQueue(
            "garbage_collector_attempt_to_orphan", rate_limiter=default_controller_rate_limiter()
        )
        self.builder = GraphBuilder(self.attempt_to_delete, self.attempt_to_orphan, self._event)
        self.monitors = Monitors(self.ctx.informers, self.builder.push)
        self._collector: Collector | None = None

    def _event(self, obj: dict[str, Any], type: str, reason: str, message: str) -> None:
        self.recorder.event(obj, type, reason, message)

    @property
    def collector(self) -> Collector:
        if self._collector is None:
            self._collector = Collector(self.builder, Operations(self.client, self.mapper, self.monitors))
        return self._collector

    # ------------------------------------------------------------------ for tests and /debug
    def graph_has_uid(self, uid: str) -> bool:
        """Whether the graph holds `uid` (upstream `GraphHasUID`, for tests)."""
        return uid in self.builder.uid_to_node

    def is_synced(self) -> bool:
        """Every monitor has synced and the graph builder has applied every event handed to it."""
        return self.monitors.is_synced() and self.builder.is_idle()

    def debug_state(self) -> dict[str, Any]:
        return {
            "workers": self.workers(),
            "workers_started": self.collecting,
            "monitors": len(self.monitors.monitors),
            "unsynced_monitors": self.monitors.unsynced(),
            "graph_nodes": len(self.builder.uid_to_node),
            "graph_changes_depth": len(self.builder.graph_changes),
            "attempt_to_delete_depth": len(self.attempt_to_delete),
            "attempt_to_orphan_depth": len(self.attempt_to_orphan),
            "absent_owner_cache": len(self.builder.absent_owner_cache),
        }

    # ------------------------------------------------------------------ lifecycle
    async def run(self) -> None:
        flags = GarbageCollectorFlags.of(self.ctx.settings)
        if not flags.enable_garbage_collector:
            self.log.info("garbage collector disabled (--enable-garbage-collector=false): not started")
            await self.ctx.stopping.wait()
            return
        if self.runs:
            self._new_state()
        self.runs += 1
        self.log.info("starting the garbage collector")
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(self.builder.run(), name="gc-graph-builder")
                group.create_task(self._sync_loop(), name="gc-discovery")
                group.create_task(self._collect(flags.concurrent_gc_syncs), name="gc-workers")
                group.create_task(self._shut_down_when_stopping(), name="gc-stop")
        finally:
            self.collecting = False
            await self.monitors.stop_all()
            self.log.info("garbage collector stopped")

    async def drain(self) -> None:
        await asyncio.gather(
            self.queue.shut_down_with_drain(),
            self.attempt_to_delete.shut_down_with_drain(),
            self.attempt_to_orphan.shut_down_with_drain(),
            self.builder.graph_changes.shut_down_with_drain(),
        )

    async def _shut_down_when_stopping(self) -> None:
        await self.ctx.stopping.wait()
        self.builder.graph_changes.shut_down()
        self.attempt_to_delete.shut_down()
        self.attempt_to_orphan.shut_down()

    async def _wait(self, timeout: float) -> None:
        """Wait `timeout` seconds, less if the manager begins stopping."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.ctx.stopping.wait(), timeout)

    async def _wait_synced(self, timeout: float, synced: Callable[[], bool] | None = None) -> bool:
        """Wait until `synced()` (default: every monitor has synced), at most `timeout` seconds."""
        synced = synced or self.monitors.is_synced
        deadline = time.monotonic() + timeout
        while not synced():
            if self.ctx.stopping.is_set() or time.monotonic() >= deadline:
                return False
            await self._wait(min(_SYNC_POLL, max(0.0, deadline - time.monotonic())))
        return True

    # ------------------------------------------------------------------ discovery (upstream Sync)
    async def _sync_loop(self) -> None:
        current: set[GroupVersionResource] = set()
        while not self.ctx.stopping.is_set():
            try:
                current = await self.sync_resources(current)
            except Exception as exc:  # the loop must outlive any one discovery round
                RESOURCES_SYNC_ERRORS.inc()
                self.log.error("garbage collector sync failed", error=f"{type(exc).__name__}: {exc}")
            await self._wait(self.resync_period)

    async def sync_resources(self, current: set[GroupVersionResource]) -> set[GroupVersionResource]:
        """One discovery round; returns the resources now monitored (`current` when nothing changed or the
        monitors could not be updated: the next round tries again)."""
        try:
            discovery = await discover_resources(self.client)
        except Exception as exc:
            self.log.info("failed to discover preferred resources", error=f"{type(exc).__name__}: {exc}")
            RESOURCES_SYNC_ERRORS.inc()
            return current
        if discovery.failed:
            self.log.info("failed to discover some groups", groups=dict(discovery.failed))
        self.mapper.update(discovery)
        wanted = deletable_resources(discovery)
        if not wanted:
            self.log.info("no resources reported by discovery, skipping garbage collector sync")
            RESOURCES_SYNC_ERRORS.inc()
            return current
        # Partial discovery: keep the synced monitors of the groups that could not be read this time.
        wanted |= {
            gvr for gvr in current if gv_of(gvr) in discovery.failed and self.monitors.is_resource_synced(gvr)
        }
        if wanted == current:
            return current
        self.log.info(
            "syncing garbage collector with updated resources from discovery",
            added=sorted(str(r) for r in wanted - current),
            removed=sorted(str(r) for r in current - wanted),
        )
        errors = await self.monitors.sync(wanted)
        if errors:
            self.log.error("failed to sync resource monitors", errors=errors)
            RESOURCES_SYNC_ERRORS.inc()
            return current
        if await self._wait_synced(self.resync_period):
            self.log.info("synced garbage collector", monitors=len(self.monitors.monitors))
        elif not self.ctx.stopping.is_set():
            self.log.error(
                "timed out waiting for dependency graph builder sync during GC sync",
                unsynced=self.monitors.unsynced(),
            )
            RESOURCES_SYNC_ERRORS.inc()
        return wanted

    # ------------------------------------------------------------------ workers (upstream Run)
    async def _collect(self, workers: int) -> None:
        # Also wait for the graph builder to apply the initial lists: an owner waiting for its dependents
        # must not be judged before they are in the graph.
        if await self._wait_synced(self.initial_sync_timeout, self.is_synced):
            self.log.info("all resource monitors have synced")
        elif self.ctx.stopping.is_set():
            return
        else:
            self.log.info(
                "not all resource monitors could be synced, proceeding anyways",
                unsynced=self.monitors.unsynced(),
            )
        self.log.info("proceeding to collect garbage", workers=workers)
        self.collecting = True
        collector = self.collector
        async with asyncio.TaskGroup() as group:
            for i in range(workers):
                group.create_task(
                    self._work(self.attempt_to_delete, collector.attempt_to_delete_worker),
                    name=f"gc-delete-{i}",
                )
                group.create_task(
                    self._work(self.attempt_to_orphan, collector.attempt_to_orphan_worker),
                    name=f"gc-orphan-{i}",
                )

    async def _work(self, queue: RateLimitingQueue[Node], handle: Callable[[Node], Awaitable[bool]]) -> None:
        """One worker: the handler says whether the item goes back through the rate limiter."""
        stopping = self.ctx.stopping
        while True:
            try:
                node = await queue.get()
            except QueueShutDown:
                return
            if stopping.is_set():  # shutting down: leave the backlog
                queue.done(node)
                return
            try:
                requeue = await handle(node)
            except asyncio.CancelledError:
                queue.add(node)
                queue.done(node)
                raise
            except Exception:  # the handlers catch their own errors; this is a safety net
                self.log.exception("garbage collector worker failed", item=str(node))
                requeue = True
            if requeue:
                queue.add_rate_limited(node)
            else:
                queue.forget(node)
            queue.done(node)
