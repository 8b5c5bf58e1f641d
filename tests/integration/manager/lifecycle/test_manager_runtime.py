"""Whole managers (server, runtime, leader election, real controllers) against kubesim over HTTP.

Short lease timings (2 s / 1.5 s / 0.3 s) keep elections fast; every wait is on a condition.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import AsyncIterator, Awaitable
from typing import Any

import aiohttp
import pytest
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from manager import (
    CONFIGMAPS,
    LEASES,
    Controller,
    For,
    ItemExponentialFailureRateLimiter,
    Request,
    Result,
)
from manager.client.rest import create_client
from manager.config.settings import Settings
from manager.leaderelection import LeaderElector
from manager.lifecycle.cluster import install
from manager.lifecycle.descriptor import ControllerInfo
from manager.lifecycle.manager import Manager
from tests.helpers import LEASE, RENEW, RETRY, manager_settings, wait_for

LABEL = "app=managed"
GAUGES = ("workqueue_longest_running_processor_seconds", "workqueue_unfinished_work_seconds")

# (controller name, id of the manager's API client, loop time) of every reconcile, in order.
RECONCILES: list[tuple[str, int, float]] = []


class LeaderOnly(Controller):
    """Reconciles its keys every 50 ms; only the leader runs it."""

    name = "leader-only-controller"
    watches = (For(CONFIGMAPS, label_selector=LABEL),)

    async def reconcile(self, request: Request) -> Result:
        RECONCILES.append((self.name, id(self.client.root), asyncio.get_running_loop().time()))
        return Result(requeue_after=0.05)


class Everywhere(LeaderOnly):
    """The same, but it runs on standby replicas too."""

    name = "everywhere-controller"
    need_leader_election = False


def info(cls: type[Any]) -> ControllerInfo:
    return ControllerInfo(cls.name, cls.aliases, cls.enabled_by_default, cls, f"{cls.name} = tests")


def settings_for(url: str, **overrides: Any) -> Settings:
    return manager_settings(url, "runtime-test", **{"shutdown_grace_period": 10.0, **overrides})


def elector(manager: Manager) -> LeaderElector:
    cluster = manager.cluster
    assert cluster is not None and cluster.elector is not None
    return cluster.elector


def client_id(manager: Manager) -> int:
    assert manager.cluster is not None
    return id(manager.cluster.client)


def reconciled_by(manager: Manager, controller: str) -> list[float]:
    if manager.cluster is None:
        return []
    return [t for name, who, t in RECONCILES if name == controller and who == client_id(manager)]


async def get(url: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        return response.status, await response.text()


async def get_json(url: str) -> Any:
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        return await response.json()


class Managers:
    """Starts managers as tasks; whatever is still running at the end is cancelled."""

    def __init__(self) -> None:
        self.runs: dict[Manager, asyncio.Task[int]] = {}

    def start(self, settings: Settings, *classes: type[Any]) -> Manager:
        manager = Manager(settings, [info(cls) for cls in classes], install=install)
        self.runs[manager] = asyncio.create_task(manager.run(handle_signals=False))
        return manager

    async def result(self, manager: Manager, timeout: float = 15.0) -> int:
        return await asyncio.wait_for(asyncio.shield(self.runs[manager]), timeout)

    async def close(self) -> None:
        for task in self.runs.values():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


@pytest.fixture
async def managers(kubesim: Any) -> AsyncIterator[Managers]:
    RECONCILES.clear()
    client = await create_client(master=kubesim.url)
    await client.create(
        CONFIGMAPS,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "subject", "namespace": "default", "labels": {"app": "managed"}},
        },
    )
    await client.close()
    group = Managers()
    yield group
    await group.close()


async def test_need_leader_election_false_runs_on_the_standby_too(kubesim: Any, managers: Managers) -> None:
    settings = settings_for(kubesim.url)
    leader = managers.start(settings, LeaderOnly, Everywhere)
    await wait_for(lambda: reconciled_by(leader, "leader-only-controller"), message="the leader reconciles")
    standby = managers.start(settings, LeaderOnly, Everywhere)
    await wait_for(
        lambda: len(reconciled_by(standby, "everywhere-controller")) >= 5,
        message="the standby runs its need_leader_election=False controller",
    )
    assert elector(leader).leading and not elector(standby).leading
    assert reconciled_by(standby, "leader-only-controller") == []
    states = {
        c["name"]: c["state"]
        for c in (await get_json(f"{standby.server.url}/debug/controllers"))["controllers"]
    }
    assert states == {"leader-only-controller": "pending", "everywhere-controller": "running"}
    status, body = await get(f"{standby.server.url}/readyz?verbose")
    assert status == 200 and "[+]informers ok" in body  # a synced standby is ready


async def test_clean_shutdown_drains_then_releases_the_lease(kubesim: Any, managers: Managers) -> None:
    gate = asyncio.Event()
    started: list[str] = []
    finished: list[float] = []

    class Slow(Controller):
        name = "slow-controller"
        watches = (For(CONFIGMAPS, label_selector="app=slow"),)

        async def reconcile(self, request: Request) -> None:
            started.append(request.key)
            await gate.wait()  # stands for a long write in flight
            finished.append(time.time())

    client = await create_client(master=kubesim.url)
    try:
        for i in range(3):  # one worker: one reconcile in flight, two keys queued behind it
            await client.create(
                CONFIGMAPS,
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": f"slow-{i}", "namespace": "default", "labels": {"app": "slow"}},
                },
            )
        manager = managers.start(settings_for(kubesim.url), Slow)
        await wait_for(lambda: started, message="a reconcile in flight")
        url = manager.server.url
        assert (await get(f"{url}/readyz"))[0] == 200
        assert manager.cluster is not None
        api = manager.cluster.client
        pool = api.pool
        await wait_for(lambda: api.open_watches > 0, message="the informers' watches open")
        manager.request_shutdown("test")  # what SIGTERM does
        status, body = await get(f"{url}/readyz?verbose")
        assert status == 500 and "[-]shutdown failed" in body  # readiness turns false first
        assert (await get(f"{url}/livez"))[0] == 200
        gate.set()
        assert await managers.result(manager) == 0
        assert len(started) == len(finished) == 1  # the in-flight one finished, no new one began
        assert pool.open_connections == 0 and api.open_watches == 0  # the API client's connections are closed
        lease = (await client.get(LEASES, "runtime-test", "kube-system"))["spec"]
        assert lease["holderIdentity"] == "" and lease["leaseDurationSeconds"] == 1
        released = lease["renewTime"]
        assert released >= time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(finished[0]))
    finally:
        await client.close()


@pytest.mark.slow
async def test_lost_lease_stops_the_controllers_and_exits_1(kubesim: Any, managers: Managers) -> None:
    manager = managers.start(settings_for(kubesim.url), LeaderOnly)
    await wait_for(lambda: len(reconciled_by(manager, "leader-only-controller")) >= 3, message="reconciling")
    assert REGISTRY.get_sample_value("leader_election_master_status", {"name": "runtime-test"}) == 1
    loop = asyncio.get_running_loop()
    kubesim.faults.fail(500, resource="leases")  # renewals fail from now on
    failing_since = loop.time()
    assert await managers.result(manager, timeout=RENEW + RETRY + 5) == 1
    exited = loop.time()
    # Gave up at the renew deadline (at most one retry period after the fault), plus slack for a loaded
    # machine; a manager that kept going would run until the 10 s grace period or forever.
    assert exited - failing_since <= RENEW + RETRY + 2.0
    last = max(reconciled_by(manager, "leader-only-controller"))
    assert last <= failing_since + RENEW + RETRY + 0.5  # no reconcile after the lease was gone
    assert elector(manager).leading is False
    assert REGISTRY.get_sample_value("leader_election_master_status", {"name": "runtime-test"}) == 0


async def test_leader_election_health_check_over_http(kubesim: Any, managers: Managers) -> None:
    manager = managers.start(settings_for(kubesim.url), LeaderOnly)
    await wait_for(lambda: manager.cluster is not None and elector(manager).leading, message="leading")
    url = manager.server.url
    assert await get(f"{url}/healthz/leaderElection") == (200, "ok")
    assert (await get(f"{url}/readyz/leaderElection"))[0] == 404  # a liveness matter, not readiness
    stalled = elector(manager)

    async def unhealthy() -> bool:
        # Pretend the renew loop has been wedged for lease duration + 20 s (a renewal in between resets it).
        stalled._clock = lambda: stalled.observed_time + LEASE + 20.5
        try:
            status, body = await get(f"{url}/healthz/leaderElection")
            livez, _ = await get(f"{url}/livez")
        finally:
            stalled._clock = None  # back to the loop's clock
        return status == 500 and "failed election to renew leadership" in body and livez == 500

    await wait_for(unhealthy, timeout=10, message="leaderElection failing")
    await wait_for(lambda: _ok(get(f"{url}/healthz/leaderElection")), message="healthy again")


async def _ok(response: Awaitable[tuple[int, str]]) -> bool:
    return (await response)[0] == 200


async def test_unreachable_api_server_fails_readiness_then_recovers(kubesim_factory: Any) -> None:
    RECONCILES.clear()
    with socket.socket() as probe:  # a port nobody listens on (yet)
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    group = Managers()
    manager = group.start(settings_for(f"http://127.0.0.1:{port}"), LeaderOnly)
    try:
        await wait_for(lambda: manager.server.port, message="the server listens")
        url = manager.server.url

        async def unready() -> str | None:
            status, body = await get(f"{url}/readyz?verbose")
            return body if status == 500 and "[-]informers failed" in body else None

        await wait_for(unready, message="readiness fails while the API server is unreachable")
        assert (await get(f"{url}/livez"))[0] == 200  # backing off, not a crash loop
        assert not group.runs[manager].done()
        sim = await kubesim_factory(port=port)
        client = await create_client(master=sim.url)
        await client.create(
            CONFIGMAPS,
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "late", "namespace": "default", "labels": {"app": "managed"}},
            },
        )
        await client.close()
        await wait_for(
            lambda: reconciled_by(manager, "leader-only-controller"),
            timeout=20,
            message="caches synced, lease taken, controllers running",
        )
        assert await get(f"{url}/readyz") == (200, "ok")
    finally:
        await group.close()


async def test_debug_page_and_workqueue_gauges_for_a_real_controller(
    kubesim: Any, managers: Managers
) -> None:
    gate = asyncio.Event()

    class Gated(Controller):
        name = "gated-controller"
        concurrency = 2
        rate_limiter = staticmethod(lambda: ItemExponentialFailureRateLimiter[Request](1.0, 1.0))
        watches = (For(CONFIGMAPS, label_selector="app=gated"),)

        async def reconcile(self, request: Request) -> None:
            if request.name == "broken":
                raise RuntimeError("no luck")
            await gate.wait()

    client = await create_client(master=kubesim.url)
    for name in ("stuck", "broken"):
        await client.create(
            CONFIGMAPS,
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": "default", "labels": {"app": "gated"}},
            },
        )
    await client.close()
    manager = managers.start(settings_for(kubesim.url), Gated)
    await wait_for(lambda: manager.server.port, message="the server listens")
    try:

        async def debug() -> dict[str, Any] | None:
            [state] = (await get_json(f"{manager.server.url}/debug/controllers"))["controllers"]
            return state if state["last_reconcile_error"] and state["in_flight"] else None

        state = await wait_for(debug, message="one key stuck in flight, one failed")
        assert state["name"] == "gated-controller" and state["state"] == "running"
        assert state["workers"] == 2 and state["workers_started"] and state["informers_synced"]
        assert state["in_flight"] == ["default/stuck"]
        assert state["last_reconcile_error"] == "RuntimeError: no luck"
        assert state["last_reconcile_error_key"] == "default/broken" and state["reconcile_errors"] >= 1

        async def gauges() -> tuple[float, float]:
            _, text = await get(f"{manager.server.url}/metrics")
            found = {}
            for family in text_string_to_metric_families(text):
                for sample in family.samples:
                    if sample.labels.get("name") == "gated" and sample.name in GAUGES:
                        found[sample.name] = sample.value
            return (
                found["workqueue_longest_running_processor_seconds"],
                found["workqueue_unfinished_work_seconds"],
            )

        longest, unfinished = await gauges()
        assert 0 < longest <= unfinished
        await wait_for(lambda: _grew(gauges(), longest), message="the stuck processor's age grows")
    finally:
        gate.set()


async def _grew(sample: Awaitable[tuple[float, float]], before: float) -> bool:
    return (await sample)[0] > before + 0.05


async def test_grace_period_cancels_a_reconcile_that_overruns_it(kubesim: Any, managers: Managers) -> None:
    started: list[str] = []
    cancelled: list[str] = []

    class Endless(Controller):
        name = "endless-controller"
        watches = (For(CONFIGMAPS, label_selector=LABEL),)

        async def reconcile(self, request: Request) -> None:
            started.append(request.key)
            try:
                await asyncio.Event().wait()  # never finishes on its own
            except asyncio.CancelledError:
                cancelled.append(request.key)
                raise

    manager = managers.start(settings_for(kubesim.url, shutdown_grace_period=0.2), Endless)
    await wait_for(lambda: started, message="a reconcile in flight")
    loop = asyncio.get_running_loop()
    asked = loop.time()
    manager.request_shutdown("test")
    assert await managers.result(manager) == 0
    assert cancelled == started == ["default/subject"]
    assert loop.time() - asked < 0.2 + 2.5  # the grace period, then the lease release and the flush
    client = await create_client(master=kubesim.url)
    try:
        assert (await client.get(LEASES, "runtime-test", "kube-system"))["spec"]["holderIdentity"] == ""
    finally:
        await client.close()


async def test_shutdown_while_the_api_server_is_unreachable(managers: Managers) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    manager = managers.start(settings_for(f"http://127.0.0.1:{port}"), LeaderOnly)
    await wait_for(lambda: manager.server.port, message="the server listens")
    await wait_for(lambda: _ok(get(f"{manager.server.url}/livez")), message="alive")
    assert (await get(f"{manager.server.url}/readyz"))[0] == 500
    manager.request_shutdown("test")  # caches never synced: nothing to drain, no lease to release
    assert await managers.result(manager, timeout=5) == 0


async def test_readiness_fails_while_an_informer_cannot_list_or_watch(
    kubesim: Any, managers: Managers, monkeypatch: pytest.MonkeyPatch
) -> None:
    import functools

    import manager.informers

    # A short failure grace (default 30 s) so the test needs no long wait.
    monkeypatch.setattr(
        manager.informers,
        "InformerFactory",
        functools.partial(manager.informers.InformerFactory, failure_grace=0.3),
    )
    running = managers.start(settings_for(kubesim.url), LeaderOnly)
    await wait_for(lambda: reconciled_by(running, "leader-only-controller"), message="running")
    url = running.server.url
    assert await get(f"{url}/readyz") == (200, "ok")
    kubesim.faults.fail(500, verb=["list", "watch"], resource="configmaps")
    kubesim.faults.close_watches()

    async def unready() -> bool:
        status, body = await get(f"{url}/readyz?verbose")
        return status == 500 and "[-]informers failed" in body

    await wait_for(unready, timeout=10, message="readiness fails while the informer cannot list or watch")
    assert (await get(f"{url}/livez"))[0] == 200
    kubesim.faults.clear()
    await wait_for(lambda: _ok(get(f"{url}/readyz")), timeout=15, message="ready again once it lists")
