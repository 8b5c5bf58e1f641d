"""The real installed console script `.venv/bin/aiokcm`, run as a subprocess.

Controllers come from a throwaway distribution (a generated .dist-info with entry points) put on PYTHONPATH,
exactly as a third-party package registers them. No API server is needed: the shell starts without one.
"""

from __future__ import annotations

import asyncio
import functools
import io
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from manager import CONFIGMAPS, EVENTS, LEASES
from manager.cli.flags import settings_class
from manager.cli.main import main
from manager.cli.plugins import GROUP, discover
from manager.cli.sandbox import SandboxApplyError, apply_manifests
from manager.client.rest import create_client
from tests.helpers import wait_for

# The settings of this installation: the manager's own flags and those the installed controllers declare.
Settings = settings_class(discover())

AIOKCM = Path(sys.executable).parent / "aiokcm"
FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
REPO = Path(__file__).resolve().parents[4]
ENTRY_POINTS = """\
[aiokcm.controllers]
steady-controller = shell_controllers:SteadyController
crashing-controller = shell_controllers:CrashingController
optional-controller = shell_controllers:OptionalController
sleepy-controller = runtime_controllers:SleepyController
"""
BASE_FLAGS = ["--leader-elect=false", "--bind-address", "127.0.0.1", "--port=0", "--log-format=json"]


def make_dist(root: Path, name: str, entry_points: str | None, version: str = "0.0.0") -> Path:
    dist_info = root / f"{name}-{version}.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    if entry_points is not None:
        (dist_info / "entry_points.txt").write_text(entry_points)
    return root


def _environment(*paths: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.upper().startswith("AIOKCM_")}
    clean["PYTHONPATH"] = os.pathsep.join([*map(str, paths), str(FIXTURES)])
    return clean


@pytest.fixture(scope="module")
def plugins(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_dist(tmp_path_factory.mktemp("plugins"), "shell-test-controllers", ENTRY_POINTS)


@pytest.fixture(scope="module")
def installed_env(plugins: Path) -> dict[str, str]:
    """The test plug-ins next to everything installed, built-in controllers included."""
    return _environment(plugins)


@pytest.fixture(scope="module")
def env(plugins: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The test plug-ins only: an `aiokcm` distribution without entry points, first on the path, hides the
    built-in controllers. Loading them costs about a second of CPU per process, and these processes never
    use them (test_list_controllers and test_installed_controllers_satisfy_the_contract cover them)."""
    from importlib.metadata import version

    shadow = make_dist(tmp_path_factory.mktemp("shadow"), "aiokcm", None, version("aiokcm"))
    return _environment(shadow, plugins)


@dataclass(frozen=True)
class Invocation:
    args: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    installed: bool = False  # run with the real installed distributions (built-in controllers visible)


@dataclass(frozen=True)
class Outcome:
    code: int
    stdout: str
    stderr: str


@pytest.fixture(scope="module")
def one_shot(
    env: dict[str, str], installed_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Outcome]]:
    """Every short-lived invocation below, run concurrently once (a process start costs 0.3-1.2 s of CPU)."""
    work = tmp_path_factory.mktemp("one-shot")
    ghost = f"[{GROUP}]\nghost = shell_controllers:NoSuchClass\n"
    broken = make_dist(work / "broken", "broken-plugin", ghost)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        invocations = {
            **{name: Invocation(args) for name, (args, _) in BAD_INPUT.items()},
            "help": Invocation(("--help",), installed=True),  # the built-in controllers' flags too
            "plugin-help": Invocation(("--help",)),  # the test plug-ins only
            "version": Invocation(("--version",), installed=True),
            "list": Invocation(("--list-controllers",), installed=True),
            "port-in-use": Invocation(
                ("--leader-elect=false", "--bind-address=127.0.0.1", f"--port={port}", "--controllers=steady")
            ),
            "broken-entry-point": Invocation(
                ("--list-controllers",), (("PYTHONPATH", env["PYTHONPATH"] + os.pathsep + str(broken)),)
            ),
        }
        processes = {
            name: subprocess.Popen(
                [str(AIOKCM), *inv.args],
                env={**(installed_env if inv.installed else env), **dict(inv.env)},
                cwd=work,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for name, inv in invocations.items()
        }
        outcomes = {}
        for name, process in processes.items():
            out, err = process.communicate(timeout=60)
            outcomes[name] = Outcome(process.returncode, out, err)
    outcomes["_port"] = Outcome(port, "", "")
    yield outcomes


class Daemon:
    """A running aiokcm with its stderr JSON log lines collected as they arrive."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.lines: list[str] = []
        self.stdout: list[str] = []
        self.reader = asyncio.create_task(self._read(process.stderr, self.lines))
        self.stdout_reader = asyncio.create_task(self._read(process.stdout, self.stdout))

    @staticmethod
    async def _read(stream: asyncio.StreamReader | None, into: list[str]) -> None:
        assert stream is not None
        async for raw in stream:
            into.append(raw.decode().rstrip("\n"))

    def events(self) -> list[dict[str, Any]]:
        out = []
        for line in self.lines:
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
        return out

    def find(self, event: str) -> list[dict[str, Any]]:
        return [e for e in self.events() if e.get("event") == event]

    async def url(self) -> str:
        served = await wait_for(lambda: self.find("serving health and metrics"), timeout=15, message="url")
        return str(served[0]["url"])

    async def wait(self, timeout: float = 20) -> int:
        code = await asyncio.wait_for(self.process.wait(), timeout)
        await self.reader
        await self.stdout_reader
        return code


@pytest.fixture
async def start(env: dict[str, str], tmp_path: Path) -> AsyncIterator[Any]:
    started: list[Daemon] = []

    async def _start(*args: str, extra_env: dict[str, str] | None = None) -> Daemon:
        process = await asyncio.create_subprocess_exec(
            str(AIOKCM),
            *BASE_FLAGS,
            *args,
            env={**env, **(extra_env or {})},
            cwd=tmp_path,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        daemon = Daemon(process)
        started.append(daemon)
        return daemon

    yield _start
    for daemon in started:
        if daemon.process.returncode is None:
            daemon.process.kill()
            await daemon.process.wait()


async def get(url: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        return response.status, await response.text()


# ---- informational flags ---------------------------------------------------------------------------------


def test_help_lists_every_flag(one_shot: dict[str, Outcome]) -> None:
    result = one_shot["help"]
    assert result.code == 0, result.stderr
    for field in Settings.model_fields:
        assert f"--{field.replace('_', '-')}" in result.stdout
    words = " ".join(result.stdout.split())  # the help wraps at the terminal's width, whatever it is
    for extra in ("--config", "--version", "--list-controllers", "(default 15s)", "AIOKCM_"):
        assert extra in words


def test_help_lists_the_flags_a_plugin_declares(one_shot: dict[str, Outcome]) -> None:
    result = one_shot["plugin-help"]
    assert result.code == 0, result.stderr
    words = " ".join(result.stdout.split())
    assert "--concurrent-sleepy-syncs int" in words and "Workers of sleepy-controller" in words
    assert "--concurrent-job-syncs" not in result.stdout  # the built-ins are hidden here: so are their flags


def test_version(one_shot: dict[str, Outcome]) -> None:
    from importlib.metadata import version

    result = one_shot["version"]
    assert (result.code, result.stdout.strip()) == (0, f"aiokcm {version('aiokcm')}")


def test_list_controllers_shows_entry_point_controllers(one_shot: dict[str, Outcome]) -> None:
    result = one_shot["list"]
    assert result.code == 0, result.stderr
    rows = {line.split()[0]: line.split()[1:] for line in result.stdout.splitlines()}
    assert rows["NAME"] == ["ALIASES", "DEFAULT"]
    assert rows["steady-controller"] == ["steady", "on"]
    assert rows["crashing-controller"] == ["crashing", "on"]
    assert rows["optional-controller"] == ["-", "off"]
    assert rows["job-controller"] == ["job", "on"]  # the built-ins register exactly like a plug-in


# ---- bad input: exit 2, one line naming the culprit, never a traceback ----------------------------------

# Run as real processes (the list); the other cases go through the same main() in-process below.
BAD_INPUT: dict[str, tuple[tuple[str, ...], str]] = {
    "unknown-flag": (("--no-such-flag",), "unknown flag: --no-such-flag"),
    "bad-duration": (("--leader-elect-lease-duration=15parsecs",), '"15parsecs"'),
    "unknown-controller": (("--controllers=steady,-nope",), '"nope" is not in the list of known controllers'),
    "unreadable-config": (("--config=/nonexistent/aiokcm.yaml",), "/nonexistent/aiokcm.yaml"),
    "bad-plugin-flag": (("--concurrent-sleepy-syncs=0",), 'invalid value "0" for --concurrent-sleepy-syncs'),
}
IN_PROCESS_BAD_INPUT: dict[str, tuple[tuple[str, ...], str]] = {
    "bad-duration-spaced": (("--shutdown-grace-period", "soon"), '"soon" for --shutdown-grace-period'),
    "bad-bool": (("--leader-elect=perhaps",), 'invalid argument "perhaps" for "--leader-elect" flag'),
    "port-out-of-range": (("--port=70000",), 'invalid value "70000" for --port'),
    "zero-workers": (("--concurrent-job-syncs=0",), 'invalid value "0" for --concurrent-job-syncs'),
    "missing-value": (("--port",), "flag needs an argument: --port"),
    "stray-argument": (("stray",), 'unexpected argument "stray"'),
    "lease-timings": (("--leader-elect-renew-deadline=20s",), "less than --leader-elect-lease-duration"),
    "unknown-controller-alias": (("--controllers=*,-jobz",), '"jobz" is not in the list of known'),
    "missing-kubeconfig": (("--kubeconfig=/nonexistent/kc",), "cannot read --kubeconfig /nonexistent/kc: no"),
    "unknown-event-loop": (("--event-loop=libev",), "--event-loop"),
}


@pytest.mark.parametrize("case", BAD_INPUT)
def test_bad_input_exits_2_with_one_line(case: str, one_shot: dict[str, Outcome]) -> None:
    result = one_shot[case]
    assert result.code == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("aiokcm: error: ") and BAD_INPUT[case][1] in lines[0]


@pytest.mark.parametrize("case", IN_PROCESS_BAD_INPUT)
def test_more_bad_input_in_process(
    case: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in list(os.environ):
        if name.upper().startswith("AIOKCM_"):
            monkeypatch.delenv(name)
    args, culprit = IN_PROCESS_BAD_INPUT[case]
    assert main(["--leader-elect=false", *args]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("aiokcm: error: ") and culprit in lines[0], captured.err
    assert captured.out == ""


def test_bad_config_file_content(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text("kube-api-qps: [unclosed\n")
    assert main(["--config", str(config)]) == 2
    expected = f"aiokcm: error: --config {config} is not valid YAML (line 2)"
    assert capsys.readouterr().err.strip().splitlines() == [expected]


def test_bad_value_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AIOKCM_KUBE_API_BURST", "lots")
    assert main([]) == 2
    assert capsys.readouterr().err.strip() == 'aiokcm: error: invalid value "lots" for --kube-api-burst: ' + (
        "Input should be a valid integer, unable to parse string as an integer"
    )


def test_port_in_use(one_shot: dict[str, Outcome]) -> None:
    result, port = one_shot["port-in-use"], one_shot["_port"].code
    assert result.code == 2
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("aiokcm: error")]
    assert errors == [result.stderr.strip().splitlines()[-1]]
    assert errors[0] == f"aiokcm: error: cannot listen on 127.0.0.1:{port}: Address already in use"


def test_a_broken_entry_point_is_listed_not_fatal(one_shot: dict[str, Outcome]) -> None:
    result = one_shot["broken-entry-point"]
    assert result.code == 0, result.stderr
    [row] = [line for line in result.stdout.splitlines() if line.startswith("ghost ")]
    assert (
        'broken: controller entry point "ghost = shell_controllers:NoSuchClass" (from broken-plugin)' in row
    )
    assert "failed to load: AttributeError" in row
    assert any(line.startswith("steady-controller ") for line in result.stdout.splitlines())


# ---- the running daemon ------------------------------------------------------------------------------------


@pytest.mark.slow
async def test_crashing_controller_restarts_with_backoff_while_another_keeps_running(start: Any) -> None:
    daemon = await start("--controllers=steady,crashing", "--shutdown-grace-period=5s")
    url = await daemon.url()

    async def debug() -> dict[str, dict[str, Any]]:
        async with aiohttp.ClientSession() as session, session.get(f"{url}/debug/controllers") as response:
            return {c["name"]: c for c in (await response.json())["controllers"]}

    async def restarted_twice() -> dict[str, dict[str, Any]] | None:
        state = await debug()
        return state if state["crashing-controller"]["restarts"] >= 2 else None

    state = await wait_for(restarted_twice, timeout=10, message="two restarts")
    crashing, steady = state["crashing-controller"], state["steady-controller"]
    assert crashing["state"] == "restarting"
    assert crashing["backoff_seconds"] == 2.0  # 1 s after the first crash, then doubled
    assert crashing["last_error"] == "RuntimeError: deliberate crash"
    assert steady["state"] == "running" and steady["restarts"] == 0
    status, body = await get(f"{url}/healthz/crashing-controller")
    assert status == 500 and "deliberate crash" in body
    assert await get(f"{url}/healthz/steady-controller") == (200, "ok")
    assert (await get(f"{url}/livez"))[0] == 200

    crashes = daemon.find("controller loop died; restarting after backoff")
    assert [c["backoff_seconds"] for c in crashes[:2]] == [1.0, 2.0]
    assert crashes[0]["controller"] == "crashing-controller"
    assert crashes[0]["exception"][0]["exc_type"] == "RuntimeError"  # traceback as data, in the log only
    work = daemon.find("work finished")
    assert work and work[0]["controller"] == "steady-controller"
    assert work[0]["key"].startswith("default/item-")  # context bound per work item shows in the log

    daemon.process.send_signal(signal.SIGTERM)
    assert await daemon.wait() == 0


async def test_the_daemon_runs_on_uvloop_unless_asked_for_asyncios_loop(start: Any) -> None:
    default = await start("--controllers=steady")
    chosen = await start("--controllers=steady", "--event-loop=asyncio")
    loops = []
    for daemon in (default, chosen):
        starting = await wait_for(
            functools.partial(daemon.find, "manager starting"), timeout=15, message="start"
        )
        loops.append(starting[0]["event_loop"])
    assert loops == ["uvloop", "asyncio"]
    work = await wait_for(lambda: default.find("work finished"), timeout=10, message="work on uvloop")
    assert work[0]["controller"] == "steady-controller"
    for daemon in (default, chosen):
        daemon.process.send_signal(signal.SIGTERM)
        assert await daemon.wait() == 0
        assert daemon.events()[-1]["event"] == "manager stopped"


@pytest.mark.slow
async def test_sigterm_drains_in_flight_work_and_exits_0(start: Any) -> None:
    daemon = await start(
        "--controllers=steady", "--shutdown-grace-period=20s", extra_env={"SHELL_TEST_WORK_SECONDS": "1.5"}
    )
    url = await daemon.url()
    await wait_for(lambda: daemon.find("work started"), timeout=10, message="work in flight")
    assert (await get(f"{url}/readyz"))[0] == 200
    daemon.process.send_signal(signal.SIGTERM)
    assert await daemon.wait() == 0
    events = [e["event"] for e in daemon.events()]
    assert events.index("shutdown requested") < events.index("work finished") < events.index("drained")
    assert events.count("work started") == events.count("work finished") == 1  # no new work after SIGTERM
    assert events[-1] == "manager stopped"
    assert "grace period over; cancelling controllers" not in events


async def test_grace_period_bounds_the_drain(start: Any) -> None:
    daemon = await start(
        "--controllers=steady", "--shutdown-grace-period=200ms", extra_env={"SHELL_TEST_WORK_SECONDS": "60"}
    )
    await daemon.url()
    await wait_for(lambda: daemon.find("work started"), timeout=10, message="work in flight")
    daemon.process.send_signal(signal.SIGTERM)
    assert await daemon.wait(timeout=10) == 0
    events = [e["event"] for e in daemon.events()]
    assert "grace period over; cancelling controllers" in events
    assert "work finished" not in events


async def test_second_signal_exits_at_once(start: Any) -> None:
    daemon = await start(
        "--controllers=steady", "--shutdown-grace-period=60s", extra_env={"SHELL_TEST_WORK_SECONDS": "60"}
    )
    await daemon.url()
    await wait_for(lambda: daemon.find("work started"), timeout=10, message="work in flight")
    daemon.process.send_signal(signal.SIGTERM)
    await wait_for(lambda: daemon.find("shutdown requested"), timeout=10, message="shutdown begun")
    daemon.process.send_signal(signal.SIGINT)
    assert await daemon.wait(timeout=10) == 1
    assert daemon.find("second signal: exiting now")


@pytest.mark.slow
async def test_sigterm_with_the_runtime_drains_reconciles_and_releases_the_lease(
    start: Any, kubesim: Any
) -> None:
    """The full runtime (informers, lease, a real Controller, events) stops in the documented order."""
    client = await create_client(master=kubesim.url)
    try:
        for i in range(3):  # one worker: one reconcile in flight, two keys queued behind it
            await client.create(
                CONFIGMAPS,
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": f"nap-{i}", "namespace": "default", "labels": {"app": "sleepy"}},
                },
            )
        daemon = await start(
            "--controllers=sleepy",
            f"--master={kubesim.url}",
            "--leader-elect=true",
            "--leader-elect-lease-duration=2s",
            "--leader-elect-renew-deadline=1500ms",
            "--leader-elect-retry-period=300ms",
            "--leader-elect-resource-name=sigterm-test",
            "--shutdown-grace-period=20s",
            extra_env={"SLEEPY_WORK_SECONDS": "1.5"},
        )
        url = await daemon.url()
        await wait_for(lambda: daemon.find("reconcile started"), timeout=15, message="a reconcile in flight")
        assert (await get(f"{url}/readyz"))[0] == 200
        daemon.process.send_signal(signal.SIGTERM)
        await wait_for(lambda: _status(f"{url}/readyz", 500), timeout=5, message="unready while draining")
        assert await daemon.wait() == 0
        events = [e["event"] for e in daemon.events()]
        assert events.count("reconcile started") == events.count("reconcile finished") == 1
        assert events.index("shutdown requested") < events.index("reconcile finished")
        # The log's last lines when the lease was not released (seen once in a CI run under load).
        assert "released the lease" in events, daemon.lines[-20:]
        assert events.index("reconcile finished") < events.index("released the lease")
        assert events[-1] == "manager stopped"
        lease = await client.get(LEASES, "sigterm-test", "kube-system")
        assert lease["spec"]["holderIdentity"] == ""
        recorded = await client.list(EVENTS, "default")
        assert [e["reason"] for e in recorded["items"] if e["reason"] == "Slept"] == ["Slept"]  # flushed
    finally:
        await client.close()


async def test_a_plugin_flag_set_by_flag_or_environment_sizes_its_workers(start: Any, kubesim: Any) -> None:
    async def workers_at(daemon: Daemon) -> int | None:
        status, body = await get_json(f"{await daemon.url()}/debug/controllers")
        [sleepy] = body["controllers"] if status == 200 else [{}]
        return sleepy.get("workers") if sleepy.get("workers_started") else None

    by_flag = await start("--controllers=sleepy", f"--master={kubesim.url}", "--concurrent-sleepy-syncs=3")
    assert await wait_for(lambda: workers_at(by_flag), timeout=15, message="sleepy's workers") == 3
    by_env = await start(
        "--controllers=sleepy", f"--master={kubesim.url}", extra_env={"AIOKCM_CONCURRENT_SLEEPY_SYNCS": "2"}
    )
    assert await wait_for(lambda: workers_at(by_env), timeout=15, message="sleepy's workers") == 2


async def _status(url: str, expected: int) -> bool:
    return (await get(url))[0] == expected


# ---- --sandbox: an embedded kubesim, manifests applied over HTTP ------------------------------------------

MANIFESTS = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: sandbox-settings}
data: {greeting: hello}
---
apiVersion: v1
kind: Namespace
metadata: {name: sandbox-team}
"""


async def get_json(url: str) -> tuple[int, Any]:
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        return response.status, await response.json(content_type=None)


async def test_sandbox_apply_creates_objects_and_leaves_existing_ones(kubesim: Any, tmp_path: Path) -> None:
    (tmp_path / "objects.yaml").write_text(MANIFESTS)
    (tmp_path / "kustomization.yaml").write_text("resources: [objects.yaml]\n")  # not an object: skipped
    (tmp_path / "notes.txt").write_text("ignored")
    assert await apply_manifests(kubesim.url, [str(tmp_path)]) == 2
    status, configmap = await get_json(f"{kubesim.url}/api/v1/namespaces/default/configmaps/sandbox-settings")
    assert status == 200 and configmap["data"] == {"greeting": "hello"}
    assert (await get_json(f"{kubesim.url}/api/v1/namespaces/sandbox-team"))[0] == 200
    assert await apply_manifests(kubesim.url, [str(tmp_path / "objects.yaml")]) == 0  # both exist already


async def test_sandbox_apply_creates_crds_first_and_waits_for_them(kubesim: Any, tmp_path: Path) -> None:
    crd = (REPO / "config/crd/pipelines.workflows.aiokcm.io.yaml").read_text()
    sample = (REPO / "config/samples/pipeline.yaml").read_text()
    (tmp_path / "a-pipeline.yaml").write_text(sample)  # sorted before the CRD it needs
    (tmp_path / "b-crd.yaml").write_text(crd)
    assert await apply_manifests(kubesim.url, [str(tmp_path)]) == 2
    url = f"{kubesim.url}/apis/workflows.aiokcm.io/v1/namespaces/default/pipelines/sample-pipeline"
    assert (await get_json(url))[0] == 200


async def test_sandbox_apply_errors_name_the_culprit(kubesim: Any, tmp_path: Path) -> None:
    with pytest.raises(SandboxApplyError, match="no-such-dir: no such file or directory"):
        await apply_manifests(kubesim.url, [str(tmp_path / "no-such-dir")])
    odd = tmp_path / "odd.yaml"
    odd.write_text("apiVersion: v1\nkind: Gadget\nmetadata: {name: g}\n")
    with pytest.raises(SandboxApplyError, match="has no Gadget in v1"):
        await apply_manifests(kubesim.url, [str(odd)])


async def test_sandbox_flag_runs_against_an_embedded_kubesim(start: Any, tmp_path: Path) -> None:
    manifest = tmp_path / "objects.yaml"
    manifest.write_text(MANIFESTS)
    daemon = await start("--sandbox", f"--sandbox-apply={manifest}", "--controllers=steady")
    await daemon.url()
    await wait_for(lambda: daemon.find("sandbox manifests applied"), timeout=15, message="manifests applied")
    printed = "\n".join(daemon.stdout)
    assert "kubeconfig written to .sandbox/kubeconfig" in printed
    sim_url = printed.split("kubesim serving at ", 1)[1].split()[0]
    assert sim_url.startswith("https://")  # RBAC by default: over HTTPS, kubesim's own CA in the kubeconfig
    assert "the manager runs as system:serviceaccount:kube-system:aiokcm" in printed
    kubeconfig = tmp_path / ".sandbox" / "kubeconfig"  # the daemon runs in tmp_path
    assert sim_url in kubeconfig.read_text()
    client = await create_client(kubeconfig=str(kubeconfig))
    try:
        assert (await client.get(CONFIGMAPS, "sandbox-settings", "default"))["data"] == {"greeting": "hello"}
    finally:
        await client.close()
    daemon.process.send_signal(signal.SIGTERM)
    assert await daemon.wait() == 0


def test_readme_documents_every_flag() -> None:
    readme = (Path(__file__).resolve().parents[4] / "README.md").read_text()
    for field in Settings.model_fields:
        assert f"`--{field.replace('_', '-')}" in readme, field
    assert "make run" in readme.split("\n## ")[0] and "make test" in readme.split("\n## ")[0]


# ---- logging as the CLI configures it (in-process; the root logger is restored afterwards) ----------------


@pytest.fixture
def restore_logging() -> Iterator[None]:
    import logging

    import structlog

    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        yield
    finally:
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in handlers:
            root.addHandler(handler)
        root.setLevel(level)
        logging.captureWarnings(False)
        structlog.reset_defaults()


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_json_logs_carry_bound_context_from_structlog_and_stdlib(restore_logging: None) -> None:
    import logging

    import structlog

    from manager.cli.logging import configure_logging

    stream = io.StringIO()
    assert configure_logging(None, "info", stream=stream) == "json"  # not a terminal: JSON
    log = structlog.get_logger("manager.test")
    with structlog.contextvars.bound_contextvars(controller="job-controller", key="default/pi"):
        log.info("reconciled", pods=3)
        logging.getLogger("aiohttp.client").warning("connection reset by %s", "peer")
        log.debug("hidden at info level")
    try:
        raise ValueError("bad object")
    except ValueError:
        log.exception("reconcile failed")
    records = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [r["event"] for r in records] == ["reconciled", "connection reset by peer", "reconcile failed"]
    assert records[0] | {"controller": "job-controller", "key": "default/pi", "pods": 3} == records[0]
    assert records[1]["logger"] == "aiohttp.client" and records[1]["level"] == "warning"
    assert records[1]["controller"] == "job-controller" and records[1]["key"] == "default/pi"
    assert records[2]["exception"][0]["exc_type"] == "ValueError" and "key" not in records[2]
    assert all("timestamp" in r for r in records)


def test_console_logs_on_a_terminal(restore_logging: None) -> None:
    import structlog

    from manager.cli.logging import configure_logging

    stream = FakeTTY()
    assert configure_logging(None, "debug", stream=stream) == "console"
    structlog.get_logger("manager.test").debug("hello", answer=42)
    line = stream.getvalue()
    assert "hello" in line and "answer" in line and "42" in line and not line.startswith("{")
    assert configure_logging("json", "info", stream=stream) == "json"  # the flag wins over the terminal


def test_flag_syntax_as_kube_controller_manager() -> None:
    from manager.cli.flags import parse_args

    parsed = parse_args(
        [
            "--port",
            "1",
            "--kube-api-qps=5",
            "--leader-elect",
            "--sandbox=false",
            "--controllers=a,b",
            "--controllers",
            "c",
            "--config",
            "x.yaml",
            "--sandbox-apply=d1",
            "--sandbox-apply",
            "d2,d3",
            "-h",
        ]
    )
    assert parsed.values == {
        "port": "1",
        "kube_api_qps": "5",
        "leader_elect": True,
        "sandbox": False,
        "controllers": ["a", "b", "c"],
        "sandbox_apply": ["d1", "d2", "d3"],
    }
    assert parsed.config == "x.yaml" and parsed.actions == {"help"}
    # A boolean never takes the next argument (pflag): "false" here is a stray argument.
    with pytest.raises(Exception, match='unexpected argument "false"'):
        parse_args(["--leader-elect", "false"])
    settings = Settings.load(parse_args(["--leader-elect=0", "--shutdown-grace-period=1m30s"]).values)
    assert settings.leader_elect is False and settings.shutdown_grace_period == 90.0
