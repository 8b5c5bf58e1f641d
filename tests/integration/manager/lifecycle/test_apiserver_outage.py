"""The manager through API server outages, against kubesim in a process of its own over HTTP.

Frozen (SIGSTOP: connections are accepted, nothing is answered) and stopped (the port refuses), the
`apiserver` readiness check fails with its reason in `/readyz?verbose`; once the server answers again
(SIGCONT, or a kubesim restarted on the same port and data directory, as a kube-apiserver restarts over
its etcd) readiness is back and the ReplicaSet
controller creates the pods of a new ReplicaSet within 5 s, even when the reflectors' backoff is 30 s.
The manager runs without leader election: an outage longer than the renew deadline ends the leader's
process by design (as kube-controller-manager's), which is not what these tests are about.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import pytest

from controllers.replicaset import ReplicaSetController
from manager import PODS, REPLICASETS
from manager.client.rest import ApiClient, create_client
from manager.lifecycle.manager import Manager
from manager.testing import run_manager
from tests.helpers import wait_for

pytestmark = pytest.mark.slow  # a kubesim process or two, and an outage each

RECOVERY_BUDGET = 5.0  # from the server's return to the controller's first write
PROBE_FLAGS = {
    "apiserver_probe_interval": 0.2,
    "apiserver_probe_timeout": 0.5,
    "apiserver_probe_failure_threshold": 2,
}


class KubesimProcess:
    """`python -m kubesim.cli` without nodes or kubelet, on `port` (0: a free one)."""

    def __init__(self) -> None:
        self.process: asyncio.subprocess.Process | None = None
        self.url = ""

    async def start(self, port: int = 0, data_dir: Path | None = None) -> str:
        durable = ("--data-dir", str(data_dir)) if data_dir is not None else ()
        self.process = await asyncio.create_subprocess_exec(
            sys.executable,
            *("-m", "kubesim.cli", "--port", str(port), "--nodes", "0", "--no-kubelet", *durable),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        assert self.process.stdout is not None
        line = (await asyncio.wait_for(self.process.stdout.readline(), 30)).decode()
        assert line.startswith("kubesim ready at "), line
        self.url = line.removeprefix("kubesim ready at ").strip()
        return self.url

    @property
    def port(self) -> int:
        return urlsplit(self.url).port or 0

    def send(self, sig: signal.Signals) -> None:
        assert self.process is not None
        self.process.send_signal(sig)

    async def stop(self) -> None:
        if self.process is None or self.process.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGCONT)  # a frozen process cannot handle SIGTERM
            self.process.terminate()
        try:
            await asyncio.wait_for(self.process.wait(), 10)
        except TimeoutError:
            self.process.kill()
            await self.process.wait()


@contextlib.asynccontextmanager
async def kubesim_process() -> AsyncIterator[KubesimProcess]:
    sim = KubesimProcess()
    try:
        yield sim
    finally:
        await sim.stop()


def replicaset(name: str, replicas: int = 2) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "x"}]},
            },
        },
    }


async def readyz(manager: Manager) -> tuple[int, str]:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{manager.server.url}/readyz?verbose") as response,
    ):
        return response.status, await response.text()


async def unready_because_of_the_apiserver(manager: Manager) -> str | None:
    status, body = await readyz(manager)
    return body if status == 500 and "[-]apiserver failed: API server 127.0.0.1:" in body else None


async def ready(manager: Manager) -> bool:
    return (await readyz(manager))[0] == 200


async def replicaset_gets_its_pods(client: ApiClient, name: str) -> None:
    await client.create(REPLICASETS, replicaset(name))

    async def pods() -> bool:
        listed = await client.list(PODS, "default", label_selector=f"app={name}")
        return len(listed["items"]) == 2

    await wait_for(pods, timeout=RECOVERY_BUDGET, interval=0.05, message=f"the pods of {name}")


async def test_a_frozen_api_server_fails_readiness_and_the_manager_acts_soon_after_its_return() -> None:
    async with kubesim_process() as sim:
        url = await sim.start()
        client = await create_client(master=url, qps=0)
        try:
            async with run_manager(url, ReplicaSetController, flags=PROBE_FLAGS) as manager:
                await replicaset_gets_its_pods(client, "before")
                await wait_for(lambda: ready(manager), message="ready")
                sim.send(signal.SIGSTOP)
                frozen = time.monotonic()
                body = await wait_for(
                    lambda: unready_because_of_the_apiserver(manager), timeout=30, message="unready"
                )
                assert time.monotonic() - frozen < 30
                assert "not answering" in body and "no answer to GET /readyz within 0.5s" in body
                sim.send(signal.SIGCONT)
                back = time.monotonic()
                await wait_for(lambda: ready(manager), timeout=RECOVERY_BUDGET, message="ready again")
                await replicaset_gets_its_pods(client, "after")
                assert time.monotonic() - back < RECOVERY_BUDGET
        finally:
            await client.close()


async def test_a_restarted_api_server_ends_a_long_backoff_at_once(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import manager.informers
    from manager.informers import Backoff

    # Reflectors that back off 30 s from the first failure: without the probe's wake-up, recovery takes 30 s.
    monkeypatch.setattr(
        manager.informers,
        "InformerFactory",
        functools.partial(manager.informers.InformerFactory, backoff=Backoff(initial=30.0, jitter=0.0)),
    )
    async with kubesim_process() as sim, kubesim_process() as restarted:
        url = await sim.start(data_dir=tmp_path)
        client = await create_client(master=url, qps=0, max_retries=0)
        try:
            async with run_manager(url, ReplicaSetController, flags=PROBE_FLAGS) as running:
                await replicaset_gets_its_pods(client, "before")
                await sim.stop()
                body = await wait_for(
                    lambda: unready_because_of_the_apiserver(running), timeout=30, message="unready"
                )
                assert "ConnectError" in body or "Refused" in body, body
                assert running.cluster is not None
                reflectors = [informer.reflector for informer in running.cluster.factory.informers()]
                await wait_for(
                    lambda: all(r.failing_since is not None for r in reflectors), message="backing off"
                )
                await restarted.start(sim.port, data_dir=tmp_path)  # same port, same store
                back = time.monotonic()
                await wait_for(lambda: ready(running), timeout=RECOVERY_BUDGET, message="ready again")
                await replicaset_gets_its_pods(client, "after")
                assert time.monotonic() - back < RECOVERY_BUDGET
                await wait_for(lambda: all(r.watching for r in reflectors), timeout=2, message="watching")
        finally:
            await client.close()
