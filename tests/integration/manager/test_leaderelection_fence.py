"""The leadership fence against kubesim over HTTP: a real elector holding a real Lease, a clock jump standing
in for a pause, and writes that must never reach the server after it; then whole managers under SIGSTOP."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import structlog
from prometheus_client import REGISTRY

from manager import (
    CONFIGMAPS,
    ApiClient,
    Controller,
    ControllerContext,
    For,
    InformerFactory,
    Request,
    Result,
)
from manager.client.rest import create_client
from manager.config.settings import Settings
from manager.leaderelection import LeaderElector, NotLeader, lease_clock
from tests.helpers import LEASE, RENEW, RETRY, wait_for

REPO = Path(__file__).resolve().parents[3]


class Elected:
    """A leading elector on a clock the test can jump forward (a SIGSTOP seen from inside)."""

    def __init__(self, client: ApiClient) -> None:
        self.jumped = 0.0
        self.elector = LeaderElector(
            client.for_component("leader-election"),
            "fence-test",
            "kube-system",
            identity="fenced",
            lease_duration=LEASE,
            renew_deadline=RENEW,
            retry_period=RETRY,
            clock=lambda: lease_clock() + self.jumped,
        )
        self.run = asyncio.create_task(self.elector.run())

    def pause(self, seconds: float) -> None:
        self.jumped += seconds


@pytest.fixture
async def elected(kubesim: Any) -> AsyncIterator[tuple[ApiClient, Elected]]:
    client = await create_client(master=kubesim.url)
    held = Elected(client)
    await wait_for(lambda: held.elector.leading, message="leading")
    yield client, held
    held.run.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await held.run
    await client.close()


def configmap(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels}}


async def exists(client: ApiClient, name: str) -> bool:
    names = {cm["metadata"]["name"] for cm in (await client.list(CONFIGMAPS, "default"))["items"]}
    return name in names


async def test_a_write_that_waited_in_the_token_bucket_across_a_pause_is_refused(
    elected: tuple[ApiClient, Elected],
) -> None:
    client, held = elected
    fenced = client.for_component("controller", qps=4, burst=1, write_gate=held.elector.check_leading)
    await fenced.create(CONFIGMAPS, configmap("before"), "default")  # takes the one token
    late = asyncio.create_task(fenced.create(CONFIGMAPS, configmap("after"), "default"))
    await wait_for(lambda: fenced.rate_limiter._tokens < 0, message="the write waits for a token")
    held.pause(LEASE + 1)  # the process stops while the write sleeps in the bucket, and resumes
    with pytest.raises(NotLeader):
        await late
    assert await exists(client, "before") and not await exists(client, "after")
    await asyncio.wait_for(held.run, RETRY + 1)  # the election ends as lost: the manager would exit
    with pytest.raises(NotLeader):
        await fenced.delete(CONFIGMAPS, "before", "default")
    assert await exists(client, "before")
    await fenced.get(CONFIGMAPS, "before", "default")  # reads go on


class Writer(Controller):
    """Writes an annotation on its ConfigMap at every reconcile, every 20 ms."""

    name = "fence-writer"
    watches = (For(CONFIGMAPS, label_selector="app=fence-writer"),)

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.written = 0
        self.refused = 0
        self.on_write: Callable[[], None] = lambda: None

    async def reconcile(self, request: Request) -> Result:
        patch = {"metadata": {"annotations": {"writes": str(self.written + 1)}}}
        try:
            await self.client.patch(CONFIGMAPS, request.name, patch, request.namespace)
        except NotLeader:
            self.refused += 1
            raise
        self.written += 1
        self.on_write()
        return Result(requeue_after=0.02)


def metric(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, {"controller": "fence-writer", **labels}) or 0.0


async def test_a_fenced_controller_stops_writing_without_errors_or_retries(
    elected: tuple[ApiClient, Elected],
) -> None:
    client, held = elected
    await client.create(CONFIGMAPS, configmap("target", app="fence-writer"), "default")
    factory = InformerFactory(client.for_component("shared-informers"))
    ctx = ControllerContext(
        settings=Settings(),
        health=None,
        logger=structlog.get_logger(),
        client=client.for_component("fence-writer", write_gate=held.elector.check_leading),
        informers=factory,
    )
    writer = Writer(ctx)
    writer.on_write = lambda: held.pause(LEASE + 1) if writer.written == 3 else None  # pause after 3 writes
    errors_before = metric("controller_runtime_reconcile_errors_total")
    run = asyncio.create_task(writer.run())
    try:
        await wait_for(lambda: writer.refused, message="the fourth write refused")
        ctx.stopping.set()  # the manager stops after a lost lease; the idle worker returns
        await asyncio.wait_for(run, 5)
    finally:
        run.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await run
        await factory.shutdown()
    assert writer.written == 3 and writer.refused == 1  # one refusal, then the worker stopped taking keys
    assert metric("controller_runtime_reconcile_errors_total") == errors_before
    stored = await client.get(CONFIGMAPS, "target", "default")
    assert stored["metadata"]["annotations"]["writes"] == "3"
    assert Request("default", "target") in writer.queue._dirty  # kept for whoever leads next


@pytest.mark.slow
def test_a_leader_paused_past_its_lease_writes_nothing_after_it_resumes() -> None:
    """Two real managers (job controller, --leader-elect) against a kubesim process; the leader gets SIGSTOP
    until the standby has taken over and acted, then SIGCONT (benchmarks/leader_failover.py)."""
    script = REPO / "benchmarks" / "leader_failover.py"
    done = subprocess.run(
        [sys.executable, str(script), "--runs", "1", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        check=True,
    )
    (run,) = json.loads(done.stdout.strip().splitlines()[-1])
    assert run["old_leader_controller_writes_after_resume"] == 0, run
    assert run["old_leader_lease_writes_after_resume"] == 0, run
    assert run["old_leader_exit_code"] == 1, run  # "leaderelection lost"
    assert run["pause_seconds"] > LEASE + 1  # the pause outlasted the lease ...
    # ... and the standby took over once the lease expired (the last renewal was at most a retry before)
    assert LEASE - 2 * RETRY <= run["takeover_seconds"] <= run["acting_seconds"] < 3 * LEASE
