"""The cluster wiring plugged into the Manager (its `install` seam): API client, shared informers, event
broadcaster, leader election and the ControllerContext every controller receives.

Start order (the Manager's groups): server → caches (event sender started, every controller's handlers
registered, informers started; each controller later waits for its own informers) → leader election
(returns once we lead) → controllers. Stop in
reverse: controllers, then the lease is released, then informers and the event sender stop, then the client
closes. Losing the lease requests an immediate, non-graceful shutdown with exit code 1.

With leader election, the writes of the leader-only controllers and of the event sender pass the elector's
fence (manager/leaderelection/__init__.py): it refuses them synchronously, right before they are sent,
from the moment the lease may have expired — before the asynchronous shutdown gets to run.

The client, informers, events and leader election are imported only when a controller needs them: a
manager running only shell controllers never pays for importing kubernetes-asyncio at start.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import structlog

from manager.controller.base import Controller, ControllerContext
from manager.lifecycle.manager import Group

if TYPE_CHECKING:
    from manager.client.rest import ApiClient
    from manager.events import EventBroadcaster
    from manager.informers import InformerFactory
    from manager.leaderelection import LeaderElector
    from manager.lifecycle.apiprobe import ApiServerProbe
    from manager.lifecycle.descriptor import ControllerInfo
    from manager.lifecycle.manager import BaseContext, Manager

log = structlog.get_logger(__name__)

CACHE_SYNC_LOG_EVERY = 30.0


class CachesRunnable:
    """The CACHES group member: starts the event sender and the informers, and returns without waiting for
    them: each controller waits for its own informers (manager.controller.cachesync), so one that cannot
    sync (a CRD not installed yet) holds back only the controllers that watch it. A task logs "caches
    synced" once all have, and which are still waiting every CACHE_SYNC_LOG_EVERY seconds until then."""

    def __init__(
        self, factory: InformerFactory, broadcaster: EventBroadcaster, controllers: list[Controller]
    ) -> None:
        self.factory = factory
        self.broadcaster = broadcaster
        self.controllers = controllers
        self._reporter: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.broadcaster.start()
        for controller in self.controllers:
            controller.setup()  # handlers first, so they see the initial lists
        self.factory.start()
        self._reporter = asyncio.get_running_loop().create_task(self._report_sync(), name="cache-sync-log")

    async def _report_sync(self) -> None:
        # One informer at a time rather than the factory's gather: cancelling a gather at shutdown leaves
        # asyncio logging "exception was never retrieved".
        for informer in self.factory.informers():
            while not await informer.wait_for_cache_sync(timeout=CACHE_SYNC_LOG_EVERY):
                log.warning(
                    "waiting for informer caches to sync",
                    unsynced=[i.health() for i in self.factory.informers() if not i.has_synced()],
                )
        log.info("caches synced", informers=len(self.factory.informers()))

    async def stop(self) -> None:
        if self._reporter is not None:
            self._reporter.cancel()
            await asyncio.gather(self._reporter, return_exceptions=True)
        await self.factory.shutdown()
        await self.broadcaster.stop()


class Cluster:
    """What `install` builds; kept on the manager as `manager.cluster` for debugging and tests."""

    def __init__(self, manager: Manager, client: ApiClient) -> None:
        from manager.events import EventBroadcaster
        from manager.informers import InformerFactory
        from manager.informers.deadline import ReadDeadline

        self.manager = manager
        self.client = client
        # As kube-controller-manager's client builder: every component its own rate limiter and user agent
        # over the one connection pool, so a busy controller cannot starve the event sender, the informers'
        # lists, the lease renewals or another controller.
        self.factory = InformerFactory(
            client.for_component("shared-informers"),
            deadline=ReadDeadline(manager.settings.watch_idle_timeout),
        )
        self.broadcaster = EventBroadcaster(
            client.for_component("event-broadcaster", write_gate=self._events_write_gate)
        )
        self.controllers: list[Controller] = []
        self.elector: LeaderElector | None = None  # set by install() before any controller is built
        self.probe: ApiServerProbe | None = None

    def _events_write_gate(self) -> None:
        # Events come from standby controllers too: refused only once this replica led and may not any more.
        if self.elector is not None:
            self.elector.check_not_deposed()

    def context(self, info: ControllerInfo, base: BaseContext) -> ControllerContext:
        fenced = self.elector is not None and getattr(info.cls, "need_leader_election", True)
        gate = self.elector.check_leading if fenced and self.elector is not None else None
        return ControllerContext(
            settings=base.settings,
            health=base.health,
            logger=base.logger,
            client=self.client.for_component(info.name, write_gate=gate),
            informers=self.factory,
            events=self.broadcaster.recorder,
            stopping=base.stopping,
            on_created=self.controllers.append,
        )

    def lost_leadership(self) -> None:
        log.error("leaderelection lost")
        self.manager.request_shutdown("leaderelection lost", exit_code=1, graceful=False)


async def install(manager: Manager) -> None:
    """Called once by the Manager before it builds the controllers and starts its groups."""

    if not any(isinstance(i.cls, type) and issubclass(i.cls, Controller) for i in manager.controllers):
        log.info("no controllers enabled: not connecting to an API server")
        return
    from manager.client.rest import ApiClient
    from manager.leaderelection import LeaderElectionRunnable, LeaderElector
    from manager.lifecycle.apiprobe import install_probe

    settings = manager.settings
    client = await ApiClient.from_settings(settings)
    manager.add_shutdown_hook(client.close)
    manager.server.delegate_reviews_to(client.for_component("delegated-auth"))
    cluster = Cluster(manager, client)
    manager.cluster = cluster
    manager.context_factory = cluster.context
    caches = CachesRunnable(cluster.factory, cluster.broadcaster, cluster.controllers)
    manager.add_runnable(Group.CACHES, caches)
    manager.health.add("informers", cluster.factory.readiness_check, livez=False, show_reason=True)
    cluster.probe = install_probe(manager, client, cluster.factory.retry_now)
    if settings.leader_elect:
        cluster.elector = LeaderElector(
            client.for_component("leader-election"),
            settings.leader_elect_resource_name,
            settings.leader_elect_resource_namespace,
            lease_duration=settings.leader_elect_lease_duration,
            renew_deadline=settings.leader_elect_renew_deadline,
            retry_period=settings.leader_elect_retry_period,
        )
        election = LeaderElectionRunnable(cluster.elector, cluster.lost_leadership)
        manager.add_runnable(Group.LEADER_ELECTION, election)
        manager.health.add("leaderElection", cluster.elector.health_check, readyz=False)
        log.info(
            "leader election enabled",
            identity=cluster.elector.identity,
            lease=f"{settings.leader_elect_resource_namespace}/{settings.leader_elect_resource_name}",
        )
