"""The manager's HTTP server over real HTTP: Kubernetes-format health endpoints, metrics, debug, 404."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import aiohttp
import pytest
import structlog
from prometheus_client.parser import text_string_to_metric_families

from manager.config.settings import Settings
from manager.lifecycle.descriptor import ControllerInfo
from manager.lifecycle.healthz import HealthChecks
from manager.lifecycle.manager import BaseContext, Group, Manager
from manager.lifecycle.server import HttpServer, ServerBindError
from tests.helpers import wait_for


@pytest.fixture(autouse=True)
def quiet_logs() -> Iterator[None]:
    with structlog.testing.capture_logs():
        yield


@dataclass
class Switches:
    failing: dict[str, str | None] = field(default_factory=dict)

    def check(self, name: str) -> Any:
        return lambda: self.failing.get(name)


@pytest.fixture
async def served() -> AsyncIterator[tuple[str, Switches, HealthChecks]]:
    switches = Switches()
    health = HealthChecks(timeout=0.5)
    health.add("ping", lambda: None)
    health.add("informers", switches.check("informers"))

    async def async_check() -> str | None:
        return switches.failing.get("leaderElection")

    health.add("leaderElection", async_check, livez=False)
    health.add("ready-only", switches.check("ready-only"), healthz=False, livez=False)
    server = HttpServer(health, "127.0.0.1", 0, lambda: {"controllers": [{"name": "x", "state": "running"}]})
    await server.start()
    try:
        yield server.url, switches, health
    finally:
        await server.stop()


async def get(url: str) -> tuple[int, str, dict[str, str]]:
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        return response.status, await response.text(), dict(response.headers)


async def test_all_passing_is_plain_ok(served: tuple[str, Switches, HealthChecks]) -> None:
    url, _, _ = served
    for endpoint in ("healthz", "livez", "readyz"):
        status, body, headers = await get(f"{url}/{endpoint}")
        assert (status, body) == (200, "ok")
        assert headers["Content-Type"].startswith("text/plain")
        assert headers["X-Content-Type-Options"] == "nosniff"


async def test_verbose_lists_each_check_and_the_verdict(served: tuple[str, Switches, HealthChecks]) -> None:
    url, _, _ = served
    status, body, _ = await get(f"{url}/healthz?verbose")
    assert status == 200
    assert body == "[+]ping ok\n[+]informers ok\n[+]leaderElection ok\nhealthz check passed\n"
    status, body, _ = await get(f"{url}/livez?verbose=true")
    assert body == "[+]ping ok\n[+]informers ok\nlivez check passed\n"  # leaderElection: not for livez
    status, body, _ = await get(f"{url}/readyz?verbose")
    assert body.endswith("[+]ready-only ok\nreadyz check passed\n")


async def test_a_failing_check_fails_the_endpoint_and_withholds_the_reason(
    served: tuple[str, Switches, HealthChecks],
) -> None:
    url, switches, _ = served
    switches.failing["leaderElection"] = "lease lost 42s ago"
    status, body, _ = await get(f"{url}/healthz")
    assert status == 500
    assert body == (
        "[+]ping ok\n[+]informers ok\n[-]leaderElection failed: reason withheld\nhealthz check failed\n"
    )
    assert "lease lost" not in body
    status, body, _ = await get(f"{url}/readyz")
    assert status == 500 and body.endswith("readyz check failed\n")
    status, _, _ = await get(f"{url}/livez")  # not registered for livez: unaffected
    assert status == 200


async def test_exclude_skips_checks_and_warns_about_unknown_names(
    served: tuple[str, Switches, HealthChecks],
) -> None:
    url, switches, _ = served
    switches.failing["informers"] = "not synced"
    status, body, _ = await get(f"{url}/healthz?exclude=informers")
    assert (status, body) == (200, "ok")
    status, body, _ = await get(f"{url}/healthz?verbose&exclude=informers&exclude=ping&exclude=bogus")
    assert status == 200
    assert body == (
        "[+]ping excluded: ok\n[+]informers excluded: ok\n[+]leaderElection ok\n"
        'warn: some health checks cannot be excluded: no matches for "bogus"\n'
        "healthz check passed\n"
    )


async def test_single_check_path(served: tuple[str, Switches, HealthChecks]) -> None:
    url, switches, _ = served
    assert (await get(f"{url}/healthz/ping"))[:2] == (200, "ok")
    switches.failing["informers"] = "pods not synced"
    status, body, _ = await get(f"{url}/healthz/informers")
    assert (status, body) == (500, "internal server error: pods not synced\n")
    assert (await get(f"{url}/livez/informers"))[0] == 500
    assert (await get(f"{url}/healthz/ping"))[0] == 200  # others undisturbed
    assert (await get(f"{url}/healthz/no-such-check"))[0] == 404
    assert (await get(f"{url}/livez/leaderElection"))[0] == 404  # exists, but not as a liveness check
    assert (await get(f"{url}/readyz/ready-only"))[0] == 200


async def test_raising_and_hanging_checks_fail(served: tuple[str, Switches, HealthChecks]) -> None:
    url, _, health = served

    def broken() -> str | None:
        raise ValueError("cannot tell")

    async def hangs() -> str | None:
        await asyncio.Event().wait()
        return None

    health.add("broken", broken)
    health.add("hangs", hangs)
    status, body, _ = await get(f"{url}/healthz?verbose")
    assert status == 500
    assert "[-]broken failed: reason withheld\n" in body and "[-]hangs failed: reason withheld\n" in body
    assert (await get(f"{url}/healthz/broken"))[1] == "internal server error: ValueError: cannot tell\n"
    assert "timed out" in (await get(f"{url}/healthz/hangs"))[1]


async def test_unknown_paths_are_404(served: tuple[str, Switches, HealthChecks]) -> None:
    url, _, _ = served
    for path in ("/", "/nope", "/debug", "/metricsx", "/healthz/ping/extra"):
        assert (await get(f"{url}{path}"))[0] == 404, path


async def test_metrics_parse_and_include_process_and_platform(
    served: tuple[str, Switches, HealthChecks],
) -> None:
    url, _, _ = served
    status, body, headers = await get(f"{url}/metrics")
    assert status == 200
    assert headers["Content-Type"].startswith("text/plain")
    names = {family.name for family in text_string_to_metric_families(body)}
    assert {"process_resident_memory_bytes", "python_info", "python_gc_objects_collected"} <= names


async def test_debug_controllers_is_json(served: tuple[str, Switches, HealthChecks]) -> None:
    url, _, _ = served
    async with aiohttp.ClientSession() as session, session.get(f"{url}/debug/controllers") as response:
        assert response.status == 200
        assert response.content_type == "application/json"
        assert await response.json() == {"controllers": [{"name": "x", "state": "running"}]}


async def test_port_in_use_is_a_clear_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        server = HttpServer(HealthChecks(), "127.0.0.1", port)
        with pytest.raises(ServerBindError, match=f"cannot listen on 127.0.0.1:{port}"):
            await server.start()


# ---- the Manager's server: per-controller checks, /debug/controllers, readiness during shutdown ----------


class Healthy:
    name, aliases, enabled_by_default = "healthy-controller", ("healthy",), True

    def __init__(self, ctx: BaseContext) -> None:
        self.ctx = ctx

    async def run(self) -> None:
        await self.ctx.stopping.wait()


class Broken:
    name, aliases, enabled_by_default = "broken-controller", (), True

    def __init__(self, ctx: BaseContext) -> None:
        self.ctx = ctx

    async def run(self) -> None:
        raise RuntimeError("loop died")


def info(cls: type[Any]) -> ControllerInfo:
    entry_point = f"{cls.name} = tests:{cls.__name__}"
    return ControllerInfo(cls.name, cls.aliases, cls.enabled_by_default, cls, entry_point)


async def test_manager_serves_controller_state_and_turns_unready_on_shutdown() -> None:
    settings = Settings.load({"bind_address": "127.0.0.1", "port": "0", "leader_elect": "false"})

    async def stays_down(_: float) -> None:  # keep the broken controller in its backoff
        await asyncio.Event().wait()

    manager = Manager(settings, [info(Broken), info(Healthy)], sleep=stays_down)
    running = asyncio.create_task(manager.run(handle_signals=False))
    try:
        await wait_for(lambda: [c.state for c in manager.supervised] == ["restarting", "running"], timeout=5)
        url = manager.server.url
        assert (await get(f"{url}/healthz/healthy-controller"))[:2] == (200, "ok")
        status, body, _ = await get(f"{url}/healthz/broken-controller")
        assert status == 500 and "RuntimeError: loop died" in body
        status, body, _ = await get(f"{url}/healthz?verbose")
        assert status == 500 and "[-]broken-controller failed: reason withheld\n" in body
        assert (await get(f"{url}/livez"))[0] == 200  # a crashed controller is restarted, not the process
        async with aiohttp.ClientSession() as session, session.get(f"{url}/debug/controllers") as response:
            debug = await response.json()
        broken, healthy = debug["controllers"]
        assert broken["name"] == "broken-controller" and broken["state"] == "restarting"
        assert broken["restarts"] == 1 and broken["last_error"] == "RuntimeError: loop died"
        assert broken["backoff_seconds"] == 1
        assert healthy == healthy | {"state": "running", "restarts": 0, "last_error": None}
        assert (await get(f"{url}/readyz"))[0] == 500  # controller checks count for readiness too
        ready_url = f"{url}/readyz?verbose&exclude=broken-controller"
        assert (await get(ready_url))[0] == 200

        manager.shutting_down = True  # what request_shutdown does first; observed before the server stops
        status, body, _ = await get(ready_url)
        assert status == 500 and "[-]shutdown failed: reason withheld\n" in body
        assert (await get(f"{url}/livez"))[0] == 200
        manager.request_shutdown("test")
        assert await asyncio.wait_for(running, 10) == 0
    finally:
        if not running.done():
            running.cancel()


# ---- the runnable-group seam: start order, reverse stop, shutdown while waiting for the lease --------------


class Recorder:
    """A runnable that records its start/stop in a shared journal; `block` keeps start() waiting."""

    def __init__(self, name: str, journal: list[str], block: bool = False) -> None:
        self.name, self.journal, self.block = name, journal, block

    async def start(self) -> None:
        self.journal.append(f"start {self.name}")
        if self.block:
            await asyncio.Event().wait()

    async def stop(self) -> None:
        self.journal.append(f"stop {self.name}")


def plain_settings() -> Settings:
    return Settings.load({"bind_address": "127.0.0.1", "port": "0", "leader_elect": "false"})


async def test_groups_start_in_order_and_stop_in_reverse() -> None:
    journal: list[str] = []
    manager = Manager(plain_settings(), [info(Healthy)])
    # Added in scrambled order on purpose: the group decides, then the order of adding within a group.
    manager.add_runnable(Group.CONTROLLERS, Recorder("controllers-extra", journal))
    manager.add_runnable(Group.LEADER_ELECTION, Recorder("lease", journal))
    manager.add_runnable(Group.CACHES, Recorder("informers", journal))
    manager.add_runnable(Group.CACHES, Recorder("events", journal))

    async def closed() -> None:
        journal.append("hook close-client")

    manager.add_shutdown_hook(closed)
    running = asyncio.create_task(manager.run(handle_signals=False))
    await wait_for(lambda: manager.supervised and manager.supervised[0].state == "running", timeout=5)
    assert journal == ["start informers", "start events", "start lease", "start controllers-extra"]
    manager.request_shutdown("test")
    assert await asyncio.wait_for(running, 10) == 0
    assert journal[4:] == [
        "stop controllers-extra",
        "stop lease",
        "stop events",
        "stop informers",
        "hook close-client",
    ]


async def test_shutdown_while_waiting_for_the_lease_never_starts_controllers() -> None:
    journal: list[str] = []
    manager = Manager(plain_settings(), [info(Healthy)])
    manager.add_runnable(Group.LEADER_ELECTION, Recorder("lease", journal, block=True))
    running = asyncio.create_task(manager.run(handle_signals=False))
    await wait_for(lambda: journal == ["start lease"], timeout=5)
    url = manager.server.url
    assert (await get(f"{url}/healthz/healthy-controller"))[0] == 200  # pending (standby) is not unhealthy
    assert manager.debug_controllers()["controllers"][0]["state"] == "pending"
    manager.request_shutdown("test")
    assert await asyncio.wait_for(running, 10) == 0
    assert journal == ["start lease", "stop lease"]  # stop() is owed even though start() never returned


async def test_lost_lease_skips_the_grace_period_and_exits_1() -> None:
    release = asyncio.Event()

    class Stubborn(Healthy):
        async def run(self) -> None:
            await release.wait()  # ignores `stopping`

    settings = Settings.load(
        {"bind_address": "127.0.0.1", "port": "0", "leader_elect": "false", "shutdown_grace_period": "1h"}
    )
    manager = Manager(settings, [info(Stubborn)])
    running = asyncio.create_task(manager.run(handle_signals=False))
    await wait_for(lambda: manager.supervised and manager.supervised[0].state == "running", timeout=5)
    manager.request_shutdown("leaderelection lost", exit_code=1, graceful=False)
    assert await asyncio.wait_for(running, 10) == 1


async def test_lost_lease_during_a_graceful_drain_cancels_at_once_and_exits_1() -> None:
    started = asyncio.Event()

    class Stubborn(Healthy):
        async def run(self) -> None:
            started.set()
            await asyncio.Event().wait()  # ignores `stopping`: in-flight work that would take an hour

    settings = Settings.load(
        {"bind_address": "127.0.0.1", "port": "0", "leader_elect": "false", "shutdown_grace_period": "1h"}
    )
    manager = Manager(settings, [info(Stubborn)])
    with structlog.testing.capture_logs() as logs:
        running = asyncio.create_task(manager.run(handle_signals=False))
        await asyncio.wait_for(started.wait(), 5)
        manager.request_shutdown("SIGTERM")  # a graceful drain begins: up to an hour
        draining = "waiting for controllers to finish in-flight work"
        await wait_for(lambda: any(e["event"] == draining for e in logs), message="the drain under way")
        assert not running.done()
        manager.request_shutdown("leaderelection lost", exit_code=1, graceful=False)
        assert await asyncio.wait_for(running, 5) == 1


async def test_install_hook_is_awaited_before_controllers_are_built() -> None:
    calls: list[list[str]] = []

    async def install(manager: Manager) -> None:
        calls.append([c.name for c in manager.controllers])
        manager.context_factory = lambda info, base: SimpleNamespace(extra=info.name, **vars(base))

    seen: list[Any] = []

    class Inspecting(Healthy):
        def __init__(self, ctx: Any) -> None:
            super().__init__(ctx)
            seen.append(ctx)

    manager = Manager(plain_settings(), [info(Inspecting)], install=install)
    running = asyncio.create_task(manager.run(handle_signals=False))
    await wait_for(lambda: manager.supervised and manager.supervised[0].state == "running", timeout=5)

    assert calls == [["healthy-controller"]]
    assert seen[0].extra == "healthy-controller" and seen[0].stopping is manager.stopping
    manager.request_shutdown("test")
    assert await asyncio.wait_for(running, 10) == 0


async def test_a_controller_that_cannot_be_constructed_is_retried_with_backoff_beside_the_others() -> None:
    attempts: list[int] = []
    naps: list[float] = []

    class Exploding(Healthy):
        name = "exploding-controller"

        def __init__(self, ctx: BaseContext) -> None:
            attempts.append(len(attempts))
            if len(attempts) < 4:
                raise ValueError("bad wiring")
            super().__init__(ctx)

    async def quick_sleep(delay: float) -> None:
        naps.append(delay)
        await asyncio.sleep(0.05)

    manager = Manager(plain_settings(), [info(Healthy), info(Exploding)], sleep=quick_sleep)
    running = asyncio.create_task(manager.run(handle_signals=False))
    await wait_for(lambda: len(manager.supervised) == 2, timeout=5)
    healthy, exploding = manager.supervised
    await wait_for(lambda: healthy.state == "running" and exploding.state == "restarting", timeout=5)
    status, body, _ = await get(f"{manager.server.url}/readyz?verbose")
    assert status == 500 and "[+]healthy-controller ok" in body and "[-]exploding-controller failed" in body
    debug = f"{manager.server.url}/debug/controllers"
    async with aiohttp.ClientSession() as session, session.get(debug) as response:
        state = {c["name"]: c for c in (await response.json())["controllers"]}
    assert state["exploding-controller"]["initialised"] is False
    assert state["exploding-controller"]["initialise_error"] == "ValueError: bad wiring"

    await wait_for(lambda: exploding.state == "running" and len(attempts) == 4, timeout=5)
    assert naps[:2] == [1.0, 2.0]  # the supervisor's backoff between attempts
    assert (await get(f"{manager.server.url}/readyz"))[0] == 200
    manager.request_shutdown("test")
    assert await asyncio.wait_for(running, 10) == 0


async def test_a_plugin_that_cannot_be_loaded_is_reported_and_the_others_run() -> None:
    from importlib.metadata import EntryPoint

    from manager.cli.plugins import GROUP, broken_plugin, load_entry_point
    from manager.cli.plugins import RegistryError as LoadError

    ghost = EntryPoint(name="ghost-controller", value="no_such_module:Ghost", group=GROUP)
    with pytest.raises(LoadError) as failure:
        load_entry_point(ghost)
    manager = Manager(plain_settings(), [info(Healthy), broken_plugin(ghost, failure.value)])
    running = asyncio.create_task(manager.run(handle_signals=False))
    await wait_for(lambda: len(manager.supervised) == 2, timeout=5)
    healthy, broken = manager.supervised
    await wait_for(lambda: healthy.state == "running" and broken.state == "restarting", timeout=5)
    status, body, _ = await get(f"{manager.server.url}/readyz?verbose")
    assert status == 500 and "[+]healthy-controller ok" in body and "[-]ghost-controller failed" in body
    assert broken.last_error is not None and "No module named 'no_such_module'" in broken.last_error
    manager.request_shutdown("test")
    assert await asyncio.wait_for(running, 10) == 0
