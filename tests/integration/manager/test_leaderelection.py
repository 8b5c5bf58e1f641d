"""Lease leader election between electors sharing one kubesim (short timings: 2 s / 1.5 s / 0.3 s)."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest

from manager import CONFIGMAPS, LEASES, ApiClient, Controller, For, Request, Result
from manager.client.rest import create_client
from manager.leaderelection import JITTER_FACTOR, LeaderElectionRunnable, LeaderElector, micro_time
from tests.helpers import LEASE, RENEW, RETRY, manager_settings, wait_for

# Worst case for a standby to notice expiry: it saw the last renewal up to one jittered retry late, and
# polls with jittered retries afterwards.
MAX_RETRY_GAP = RETRY * (1 + JITTER_FACTOR)
MICROTIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


class Timeline:
    """Every leadership change of every elector, in loop time; asserts there is never a second leader."""

    def __init__(self) -> None:
        self.leaders: set[str] = set()
        self.max_concurrent = 0
        self.changes: list[tuple[float, str, bool]] = []

    def record(self, identity: str, leading: bool) -> None:
        (self.leaders.add if leading else self.leaders.discard)(identity)
        self.max_concurrent = max(self.max_concurrent, len(self.leaders))
        self.changes.append((asyncio.get_running_loop().time(), identity, leading))


class RecordingElector(LeaderElector):
    timeline: Timeline

    def _set_leading(self, leading: bool) -> None:
        changed = leading != self.leading
        super()._set_leading(leading)
        if changed:
            self.timeline.record(self.identity, leading)


class Pool:
    def __init__(self, client: ApiClient) -> None:
        self.client = client
        self.timeline = Timeline()
        self.tasks: dict[str, asyncio.Task[None]] = {}

    def elector(self, identity: str) -> RecordingElector:
        elector = RecordingElector(
            self.client,
            "aiokcm-test",
            "kube-system",
            identity=identity,
            lease_duration=LEASE,
            renew_deadline=RENEW,
            retry_period=RETRY,
        )
        elector.timeline = self.timeline
        self.tasks[identity] = asyncio.create_task(elector.run())
        return elector

    async def stop(self, identity: str) -> None:
        task = self.tasks.pop(identity)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    async def lease(self) -> dict[str, Any]:
        return await self.client.get(LEASES, "aiokcm-test", "kube-system")


@pytest.fixture
async def pool(kubesim: Any) -> AsyncIterator[Pool]:
    client = await create_client(master=kubesim.url)
    p = Pool(client)
    yield p
    for identity in list(p.tasks):
        await p.stop(identity)
    await client.close()
    assert p.timeline.max_concurrent <= 1, p.timeline.changes


@pytest.mark.slow
async def test_one_leads_and_a_hard_stop_fails_over_after_expiry(pool: Pool) -> None:
    a, b = pool.elector("a"), pool.elector("b")
    leader = await wait_for(lambda: a if a.leading else b if b.leading else None, message="a leader")
    standby = b if leader is a else a
    # An observation window, not synchronisation: the standby polls through a whole lease duration and
    # must not take over from a leader that keeps renewing (the pool fixture checks "never two leaders").
    await asyncio.sleep(LEASE + RETRY)
    assert leader.leading and not standby.leading
    spec = (await pool.lease())["spec"]
    assert spec["holderIdentity"] == leader.identity
    assert MICROTIME.match(spec["renewTime"]) and MICROTIME.match(spec["acquireTime"])
    assert spec["leaseDurationSeconds"] == 2

    leader.release_on_cancel = False  # a crash: nothing is released
    last_renewal = leader.observed_time
    stopped_at = leader.now()
    await pool.stop(leader.identity)
    await wait_for(lambda: standby.leading, timeout=LEASE + 2 * MAX_RETRY_GAP + 1, message="failover")
    took_over = standby.now()
    assert took_over - last_renewal >= LEASE - 0.05  # never before the lease expired
    assert took_over - stopped_at <= LEASE + 2 * MAX_RETRY_GAP + 0.7  # slack for a loaded machine
    spec = (await pool.lease())["spec"]
    assert spec["holderIdentity"] == standby.identity and spec["leaseTransitions"] == 1


async def test_clean_stop_releases_and_the_standby_takes_over_at_once(pool: Pool) -> None:
    loop = asyncio.get_running_loop()
    a = pool.elector("a")
    await wait_for(lambda: a.leading, message="a leads")
    b = pool.elector("b")
    await wait_for(lambda: b.observed_spec is not None, message="b saw the lease")
    stopped_at = loop.time()
    await pool.stop("a")  # release_on_cancel=True
    released = (await pool.lease())["spec"]
    assert released["holderIdentity"] == "" and released["leaseDurationSeconds"] == 1
    await wait_for(lambda: b.leading, timeout=LEASE, message="b leads after the release")
    assert loop.time() - stopped_at < MAX_RETRY_GAP + 0.6  # well before a lease duration (2 s)


async def test_release_reads_the_lease_first_so_a_late_renewal_does_not_conflict(pool: Pool) -> None:
    # client-go's release() Gets before it Updates: a renewal cancelled in flight may still land on the
    # server and move the resourceVersion under the one the elector knows.
    a = pool.elector("a")
    await wait_for(lambda: a.leading, message="a leads")
    a.release_on_cancel = False
    await pool.stop("a")
    landed = await pool.lease()  # the late renewal: same holder, a new resourceVersion
    landed["spec"]["renewTime"] = micro_time()
    await pool.client.update(LEASES, landed)
    assert await a.release()
    released = (await pool.lease())["spec"]
    assert released["holderIdentity"] == "" and released["leaseDurationSeconds"] == 1


async def test_release_leaves_a_lease_taken_over_behind_our_back(pool: Pool) -> None:
    a = pool.elector("a")
    await wait_for(lambda: a.leading, message="a leads")
    a.release_on_cancel = False
    await pool.stop("a")
    taken = await pool.lease()
    taken["spec"].update(holderIdentity="usurper", renewTime=micro_time())
    await pool.client.update(LEASES, taken)
    assert not await a.release()
    assert (await pool.lease())["spec"]["holderIdentity"] == "usurper"


@pytest.mark.slow
async def test_losing_the_lease_ends_run_and_reports_it(pool: Pool) -> None:
    lost = asyncio.Event()
    elector = RecordingElector(
        pool.client,
        "aiokcm-test",
        "kube-system",
        identity="victim",
        lease_duration=LEASE,
        renew_deadline=RENEW,
        retry_period=RETRY,
    )
    elector.timeline = pool.timeline
    runnable = LeaderElectionRunnable(elector, lost.set)
    await asyncio.wait_for(runnable.start(), 5)  # returns once leading
    assert elector.leading and elector.health_check() is None
    lease = await pool.lease()  # someone else grabs the lease behind our back
    lease["spec"].update(holderIdentity="usurper", renewTime=micro_time())
    await pool.client.update(LEASES, lease)
    loop = asyncio.get_running_loop()
    start = loop.time()
    await asyncio.wait_for(lost.wait(), RENEW + RETRY + 2)
    assert not elector.leading
    assert loop.time() - start <= RENEW + RETRY + 1
    await runnable.stop()


async def test_health_check_fails_when_leader_stops_renewing(pool: Pool) -> None:
    now = [100.0]
    elector = LeaderElector(pool.client, "hc", "kube-system", identity="x", clock=lambda: now[0])
    assert elector.health_check() is None  # not leading: nothing to check
    elector.observed_time = 100.0
    elector._set_leading(True)
    now[0] += 15 + 20
    assert elector.health_check() is None
    now[0] += 0.1
    assert elector.health_check() == "failed election to renew leadership on lease hc"


def test_timings_are_validated() -> None:
    with pytest.raises(ValueError, match="lease duration > renew deadline"):
        LeaderElector(None, "x", "y", lease_duration=2, renew_deadline=2, retry_period=0.3)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        LeaderElector(None, "x", "y", lease_duration=15, renew_deadline=2, retry_period=2)  # type: ignore[arg-type]


def test_micro_time_has_six_fractional_digits() -> None:
    import datetime

    moment = datetime.datetime(2026, 1, 2, 3, 4, 5, 7, tzinfo=datetime.UTC)
    assert micro_time(moment) == "2026-01-02T03:04:05.000007Z"
    assert MICROTIME.match(micro_time())


# ---------------------------------------------------------------- two whole managers (runtime wiring)

HEARTBEATS: list[tuple[float, int]] = []  # (loop time, id of the reconciling manager's client)


class HeartbeatController(Controller):
    """Reconciles its one key every 50 ms while its manager leads."""

    name = "heartbeat-controller"
    watches = (For(CONFIGMAPS, label_selector="app=heartbeat"),)

    async def reconcile(self, request: Request) -> Result:
        HEARTBEATS.append((asyncio.get_running_loop().time(), id(self.client.root)))
        return Result(requeue_after=0.05)


@pytest.mark.slow
async def test_two_managers_only_the_leader_reconciles(kubesim: Any) -> None:
    from manager.lifecycle.cluster import install
    from manager.lifecycle.descriptor import ControllerInfo
    from manager.lifecycle.manager import Manager

    info = ControllerInfo("heartbeat-controller", (), True, HeartbeatController, "test")
    settings = manager_settings(kubesim.url, "managers-test")
    client = await create_client(master=kubesim.url)
    await client.create(
        CONFIGMAPS,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "beat", "namespace": "default", "labels": {"app": "heartbeat"}},
        },
    )
    HEARTBEATS.clear()
    first, second = Manager(settings, [info], install=install), Manager(settings, [info], install=install)
    runs = {m: asyncio.create_task(m.run(handle_signals=False)) for m in (first, second)}

    def elector(m: Manager) -> LeaderElector:
        assert m.cluster is not None and m.cluster.elector is not None
        return m.cluster.elector

    def client_id(m: Manager) -> int:
        assert m.cluster is not None
        return id(m.cluster.client)

    try:
        leader = await wait_for(
            lambda: next((m for m in runs if m.cluster and elector(m).leading), None),
            message="a leading manager",
        )
        standby = second if leader is first else first
        await wait_for(lambda: len(HEARTBEATS) > 5, message="the leader reconciles")
        assert {who for _, who in HEARTBEATS} == {client_id(leader)}

        elector(leader).release_on_cancel = False  # hard stop: no release
        # The last renewal in loop time (the heartbeats' clock); the elector counts on its own clock.
        since_renewal = elector(leader).now() - elector(leader).observed_time
        last_renewal = asyncio.get_running_loop().time() - since_renewal
        runs[leader].cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await runs.pop(leader)
        stopped_at = asyncio.get_running_loop().time()
        await wait_for(
            lambda: any(who == client_id(standby) for _, who in HEARTBEATS),
            timeout=LEASE + 2 * MAX_RETRY_GAP + 3,
            message="the standby reconciles",
        )
        first_by_standby = min(t for t, who in HEARTBEATS if who == client_id(standby))
        last_by_leader = max(t for t, who in HEARTBEATS if who == client_id(leader))
        assert last_by_leader <= stopped_at < first_by_standby  # never both
        assert first_by_standby - last_renewal >= LEASE - 0.05
        # ... and within a lease duration plus the standby's (jittered) retries; slack for a loaded machine
        assert first_by_standby - stopped_at <= LEASE + 2 * MAX_RETRY_GAP + 1.0

        # Losing the lease ends the manager with exit code 1.
        lease = await client.get(LEASES, "managers-test", "kube-system")
        lease["spec"].update(holderIdentity="usurper", renewTime=micro_time())
        await client.update(LEASES, lease)
        code = await asyncio.wait_for(runs.pop(standby), RENEW + RETRY + 5)
        assert code == 1
    finally:
        for task in runs.values():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await client.close()


def test_identity_is_hostname_underscore_uuid() -> None:
    import socket
    import uuid

    from manager.leaderelection import default_identity

    host, _, rest = default_identity().rpartition("_")
    assert host == socket.gethostname()
    assert str(uuid.UUID(rest)) == rest
    assert default_identity() != default_identity()  # unique per process start
