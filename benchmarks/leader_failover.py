"""Leader failover under a pause: how long until the standby acts, and how many writes the old leader
makes after it resumes (target: 0).

    .venv/bin/python benchmarks/leader_failover.py [--runs 3] [--lease 2] [--json]

Processes: kubesim, two managers (`aiokcm --controllers job --leader-elect`, lease 2 s / renew 1.5 s /
retry 0.3 s) and this driver. Each manager reaches kubesim through its own recording proxy in the driver,
so every request is attributed to the manager that sent it, timed when it reaches the proxy. The driver
creates a one-pod Job every 100 ms so that the leader's job controller writes all the time; once the
first manager leads and writes, it is paused (SIGSTOP) until the standby has acted, plus a lease duration
(a pause far longer than the lease, as in the incident), then resumed (SIGCONT) and watched for 3 s.

Figures per run: seconds from the pause to the standby's first Lease write (its takeover) and to its first
controller write ("acting"), the old leader's writes (controller and Lease) after it resumed, and its exit
code (1: "leaderelection lost"). FAILOVER_MANAGER_CMD replaces the manager executable, e.g. another
checkout's `.venv/bin/aiokcm` to compare with a build without the fence.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httptools
from kubesim_process import running_kubesim

from manager import JOBS, LEASES, ApiClient, NotFound
from manager.client.rest import create_client

NS = "default"
LEASE_NAME = "failover"
WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})


@dataclass
class Request:
    at: float  # time.monotonic() when its head reached the proxy
    method: str
    path: str

    @property
    def is_write(self) -> bool:
        return self.method in WRITES

    @property
    def is_lease(self) -> bool:
        return "/leases" in self.path


@dataclass
class RecordingProxy:
    """A TCP proxy to the API server that records the head of every request passing through it."""

    upstream: tuple[str, int]
    requests: list[Request] = field(default_factory=list)
    _server: asyncio.Server | None = None

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()

    def writes(self, *, after: float, lease: bool) -> list[Request]:
        return [r for r in self.requests if r.is_write and r.at > after and r.is_lease == lease]

    async def _serve(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        server_reader, server_writer = await asyncio.open_connection(*self.upstream)
        recorder = _HeadRecorder(self)
        parser = recorder.parser = httptools.HttpRequestParser(recorder)

        async def upstream() -> None:
            while data := await client_reader.read(65536):
                parser.feed_data(data)
                server_writer.write(data)
                await server_writer.drain()

        async def downstream() -> None:
            while data := await server_reader.read(65536):
                client_writer.write(data)
                await client_writer.drain()

        pumps = [asyncio.ensure_future(upstream()), asyncio.ensure_future(downstream())]
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            pass  # the driver is ending
        finally:
            for pump in pumps:
                pump.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)  # a closed connection ends a pump: fine
            for writer in (client_writer, server_writer):
                writer.close()


class _HeadRecorder:
    """httptools callbacks: one Request per request head."""

    def __init__(self, proxy: RecordingProxy) -> None:
        self.proxy = proxy
        self.parser: httptools.HttpRequestParser | None = None
        self.url = b""

    def on_message_begin(self) -> None:
        self.url = b""

    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_headers_complete(self) -> None:
        assert self.parser is not None
        method = self.parser.get_method().decode("latin-1")
        self.proxy.requests.append(Request(time.monotonic(), method, self.url.decode("latin-1")))


def start_manager(url: str, log_path: str, lease: float) -> subprocess.Popen[bytes]:
    command = os.environ.get("FAILOVER_MANAGER_CMD", os.path.join(os.path.dirname(sys.executable), "aiokcm"))
    args = [
        *command.split(), "--master", url, "--controllers", "job", "--leader-elect",
        "--leader-elect-lease-duration", f"{lease}s", "--leader-elect-renew-deadline", f"{lease * 0.75}s",
        "--leader-elect-retry-period", f"{lease * 0.15}s", "--leader-elect-resource-name", LEASE_NAME,
        "--leader-elect-resource-namespace", NS, "--kube-api-qps", "0", "--bind-address", "127.0.0.1",
        "--port", "0", "--log-format", "json", "--log-level", "info",
    ]  # fmt: skip
    with open(log_path, "wb") as log:
        return subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)


def one_pod_job(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "template": {
                "metadata": {"annotations": {"kubesim.aiokcm.io/run-seconds": "0.3"}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]},
            }
        },
    }


async def keep_creating_jobs(client: ApiClient, prefix: str) -> None:
    for i in range(10**6):
        await client.create(JOBS, one_pod_job(f"{prefix}-{i}"), NS)
        await asyncio.sleep(0.1)


async def until(check: Callable[[], bool | Awaitable[bool]], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not await _value(check()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def lease_held(client: ApiClient) -> bool:
    try:
        lease = await client.get(LEASES, LEASE_NAME, NS)
    except NotFound:
        return False
    return bool((lease.get("spec") or {}).get("holderIdentity"))


async def one_run(run: int, lease: float) -> dict[str, Any]:
    with running_kubesim("--nodes", "5", "--log-level", "warning") as (_, url):
        target = urlsplit(url)
        upstream = (target.hostname or "127.0.0.1", target.port or 80)
        proxies = [RecordingProxy(upstream), RecordingProxy(upstream)]
        urls = [await p.start() for p in proxies]
        client = await create_client(master=url, qps=0)
        logs = [
            os.path.join(tempfile.gettempdir(), f"leader_failover_{os.getpid()}_{run}_{i}.log")
            for i in (0, 1)
        ]
        managers: list[subprocess.Popen[bytes]] = []
        workload: asyncio.Task[None] | None = None
        try:
            managers.append(start_manager(urls[0], logs[0], lease))
            await until(lambda: lease_held(client), 30, "the first manager to lead")
            managers.append(start_manager(urls[1], logs[1], lease))
            await until(lambda: _logged(logs[1], b"leader election enabled"), 30, "the standby to start")
            workload = asyncio.create_task(keep_creating_jobs(client, f"r{run}"))
            old, standby = proxies
            await until(lambda: bool(old.writes(after=0, lease=False)), 30, "the leader to write")
            await asyncio.sleep(1.0)  # steady state: the leader writes all the time
            paused_at = time.monotonic()
            managers[0].send_signal(signal.SIGSTOP)
            await until(lambda: bool(standby.writes(after=0, lease=False)), 30, "the standby to act")
            await asyncio.sleep(lease)  # a pause far longer than the lease
            resumed_at = time.monotonic()
            managers[0].send_signal(signal.SIGCONT)
            await asyncio.sleep(3.0)
            with contextlib.suppress(subprocess.TimeoutExpired):
                managers[0].wait(5)
            took_over = min(r.at for r in standby.writes(after=0, lease=True))
            acted = min(r.at for r in standby.writes(after=0, lease=False))
            return {
                "takeover_seconds": took_over - paused_at,
                "acting_seconds": acted - paused_at,
                "pause_seconds": resumed_at - paused_at,
                "old_leader_controller_writes_after_resume": len(old.writes(after=resumed_at, lease=False)),
                "old_leader_lease_writes_after_resume": len(old.writes(after=resumed_at, lease=True)),
                "old_leader_exit_code": managers[0].returncode,
            }
        finally:
            if workload is not None:
                workload.cancel()
                await asyncio.gather(workload, return_exceptions=True)
            for proc in managers:
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGCONT)
                    proc.terminate()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(10)
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
            await client.close()
            for proxy in proxies:
                await proxy.stop()


async def _value(outcome: bool | Awaitable[bool]) -> bool:
    return outcome if isinstance(outcome, bool) else await outcome


def _logged(path: str, needle: bytes) -> bool:
    with open(path, "rb") as f:
        return needle in f.read()


async def main(runs: int, lease: float, as_json: bool) -> None:
    results = []
    for run in range(runs):
        result = await one_run(run, lease)
        results.append(result)
        if not as_json:
            print(
                f"run {run + 1}: standby took over {result['takeover_seconds']:.3f}s and acted "
                f"{result['acting_seconds']:.3f}s after the pause; old leader after resume: "
                f"{result['old_leader_controller_writes_after_resume']} controller writes, "
                f"{result['old_leader_lease_writes_after_resume']} lease writes, "
                f"exit code {result['old_leader_exit_code']}",
                flush=True,
            )
    if as_json:
        print(json.dumps(results))
        return
    keys = ("takeover_seconds", "acting_seconds", "old_leader_controller_writes_after_resume")
    print("median: " + ", ".join(f"{k}={statistics.median(r[k] for r in results):.2f}" for k in keys))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--lease", type=float, default=2.0, help="lease duration in seconds")
    parser.add_argument("--json", action="store_true", help="print the runs' figures as one JSON list")
    args = parser.parse_args()
    asyncio.run(main(args.runs, args.lease, args.json))
