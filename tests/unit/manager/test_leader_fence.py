"""The leadership fence on an injected clock: when it closes, what a late renewal answer means, and that a
leader resuming from a pause refuses writes before it has re-checked anything."""

from __future__ import annotations

import asyncio
import copy
import socket
from typing import Any

import pytest

from manager.apimachinery.resources import CONFIGMAPS, GroupVersionResource
from manager.client import Conflict, ConnectError, NotFound, RestConfig
from manager.client.rest import ApiClient
from manager.leaderelection import LeaderElector, LeaseFence, NotLeader

LEASE, RENEW, RETRY, MARGIN = 2.0, 1.5, 0.3, 0.2


class Clock:
    def __init__(self, now: float = 100.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class FakeLeases:
    """One Lease with resourceVersion semantics; each write answers `answer_delay` (clock seconds) late."""

    def __init__(self, clock: Clock, answer_delay: float = 0.0) -> None:
        self.clock = clock
        self.answer_delay = answer_delay
        self.lease: dict[str, Any] | None = None
        self.version = 0
        self.writes: list[float] = []  # clock time each write was received

    def _store(self, body: dict[str, Any]) -> dict[str, Any]:
        self.writes.append(self.clock.now)
        self.version += 1
        self.lease = copy.deepcopy(body)
        self.lease["metadata"]["resourceVersion"] = str(self.version)
        self.clock.now += self.answer_delay  # the answer arrives late
        return copy.deepcopy(self.lease)

    async def get(self, gvr: GroupVersionResource, name: str, namespace: str) -> dict[str, Any]:
        if self.lease is None:
            raise NotFound(404, "NotFound")
        return copy.deepcopy(self.lease)

    async def create(self, gvr: GroupVersionResource, body: dict[str, Any], namespace: str) -> dict[str, Any]:
        if self.lease is not None:
            raise Conflict(409, "AlreadyExists")
        return self._store(body)

    async def update(self, gvr: GroupVersionResource, body: dict[str, Any]) -> dict[str, Any]:
        assert self.lease is not None
        if body["metadata"].get("resourceVersion") != self.lease["metadata"]["resourceVersion"]:
            raise Conflict(409, "Conflict")
        return self._store(body)

    def take_over(self, holder: str) -> None:
        assert self.lease is not None
        self.lease["spec"]["holderIdentity"] = holder
        self.version += 1
        self.lease["metadata"]["resourceVersion"] = str(self.version)


def elector(leases: FakeLeases, clock: Clock) -> LeaderElector:
    return LeaderElector(
        leases,  # type: ignore[arg-type]  # the three calls the elector makes
        "fence",
        "kube-system",
        identity="me",
        lease_duration=LEASE,
        renew_deadline=RENEW,
        retry_period=RETRY,
        fence_margin=MARGIN,
        clock=clock,
    )


def test_the_fence_closes_at_send_time_plus_lease_duration_minus_margin() -> None:
    clock = Clock(10.0)
    fence = LeaseFence(LEASE, MARGIN, clock)
    with pytest.raises(NotLeader, match="does not hold the leader lease"):
        fence.check()  # never held: closed for leader-only writes ...
    fence.check_not_deposed()  # ... but a standby's shared components may write
    fence.renewed(sent_at=10.0)
    clock.now = 11.79
    fence.check()
    clock.now = 11.8
    with pytest.raises(NotLeader, match="may have expired"):
        fence.check()
    with pytest.raises(NotLeader):
        fence.check_not_deposed()
    fence.renewed(sent_at=11.7)  # an answer arriving after the close reopens nothing
    clock.now = 11.75
    assert not fence.is_open() and fence.deposed


def test_a_renewal_sent_after_the_fence_closed_never_reopens_it() -> None:
    clock = Clock(10.0)
    fence = LeaseFence(LEASE, MARGIN, clock)
    fence.renewed(sent_at=10.0)
    fence.renewed(sent_at=11.9)  # sent when the lease may already have expired: nobody checked in between
    clock.now = 11.95
    assert not fence.is_open()
    assert fence.closed_for == "a renewal was sent after the lease may have expired"


def test_margin_is_validated() -> None:
    with pytest.raises(ValueError, match="fence margin"):
        LeaseFence(2.0, 2.0, Clock())
    with pytest.raises(ValueError, match="fence margin"):
        LeaderElector(None, "x", "y", fence_margin=-1)  # type: ignore[arg-type]


async def test_a_late_renewal_answer_extends_from_the_send_time_not_the_arrival() -> None:
    clock = Clock(100.0)
    leases = FakeLeases(clock, answer_delay=1.5)  # every answer arrives 1.5 s after the request
    me = elector(leases, clock)
    assert await me._try_acquire_or_renew()  # the create, sent at 100.0, answered at 101.5
    me._set_leading(True)
    assert clock.now == 101.5
    assert me.fence.closes_at == pytest.approx(100.0 + LEASE - MARGIN)
    clock.now = 101.6
    assert await me._try_acquire_or_renew()  # the renewal, sent at 101.6, answered at 103.1
    assert me.fence.closes_at == pytest.approx(101.6 + LEASE - MARGIN)  # 103.4, not 103.1 + 1.8
    clock.now = 103.39
    me.check_leading()
    clock.now = 103.4
    with pytest.raises(NotLeader):
        me.check_leading()


async def test_resume_after_a_pause_refuses_writes_before_any_recheck() -> None:
    clock = Clock(100.0)  # frozen, except for the pause: renewals every 0.3 s (real) keep the lease
    leases = FakeLeases(clock)
    me = elector(leases, clock)
    run = asyncio.create_task(me.run())
    await asyncio.wait_for(me.elected.wait(), 1)
    me.check_leading()
    clock.now += 30.0  # SIGSTOP for 30 s, then SIGCONT: nothing has run since
    writes = len(leases.writes)
    with pytest.raises(NotLeader):
        me.check_leading()  # the gate alone refuses, before the renew loop has even woken up
    await asyncio.wait_for(run, 1)  # the election ends as lost (the manager exits on that) ...
    assert len(leases.writes) == writes  # ... without writing the Lease again
    assert not me.leading


async def test_seeing_another_holder_closes_the_fence_at_once() -> None:
    clock = Clock(100.0)
    leases = FakeLeases(clock)
    me = elector(leases, clock)
    assert await me._try_acquire_or_renew()
    me._set_leading(True)
    leases.take_over("usurper")
    assert not await me._try_acquire_or_renew()
    assert me.fence.closed_for == "the lease is held by 'usurper' now"
    with pytest.raises(NotLeader):
        me.check_leading()


async def test_a_new_term_gets_a_new_fence() -> None:
    clock = Clock(100.0)
    leases = FakeLeases(clock)
    me = elector(leases, clock)
    assert await me._try_acquire_or_renew()
    me._set_leading(True)
    me._set_leading(False)  # lost
    first = me.fence
    assert first.deposed
    leases.take_over("")  # released meanwhile
    task = asyncio.create_task(me.run())
    try:
        await asyncio.wait_for(me.elected.wait(), 1)
        me.check_leading()
        assert first.deposed  # whoever kept the old fence still sees it closed
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_the_client_refuses_gated_writes_before_touching_the_network() -> None:
    refused = NotLeader("not writing: test")

    def gate() -> None:
        raise refused

    client = ApiClient(RestConfig(host=f"http://127.0.0.1:{closed_port()}"), max_retries=0)
    fenced = client.for_component("fenced", write_gate=gate)
    try:
        body = {"metadata": {"name": "x"}}
        with pytest.raises(NotLeader):
            await fenced.create(CONFIGMAPS, body, "default")
        with pytest.raises(NotLeader):
            await fenced.delete(CONFIGMAPS, "x", "default")
        with pytest.raises(ConnectError):  # reads are not fenced: this one went for the (closed) port
            await fenced.get(CONFIGMAPS, "x", "default")
        with pytest.raises(ConnectError):  # the client it came from has no gate
            await client.create(CONFIGMAPS, body, "default")
        assert fenced.for_component("child").write_gate is gate  # derived clients keep the gate
    finally:
        await client.close()
