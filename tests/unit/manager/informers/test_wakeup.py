"""Backoff waits the API server probe can end: RetrySignal alone, then inside the reflector's loop (fake
clock for the backoff, a sleep that never ends by itself: only a wake-up ends a wait)."""

from __future__ import annotations

import asyncio
import functools

import pytest

from manager.apimachinery.resources import PODS
from manager.client.config import RestConfig
from manager.client.rest import ApiClient
from manager.informers import InformerFactory
from manager.informers.backoff import Backoff
from manager.informers.reflector import Reflector
from manager.informers.wakeup import RetrySignal
from tests.helpers import wait_for


class EndlessSleep:
    """A sleep that never ends by itself; records each requested delay."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def waited(self, times: int) -> bool:
        return len(self.delays) == times

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)
        await asyncio.Event().wait()


async def test_a_wait_ends_after_its_delay_when_nobody_wakes_it() -> None:
    async def instant(delay: float) -> None:
        await asyncio.sleep(0)

    assert await RetrySignal().sleep(30.0, instant) is False


async def test_wake_ends_every_current_wait_and_no_later_one() -> None:
    signal = RetrySignal()
    sleep = EndlessSleep()
    waits = [asyncio.create_task(signal.sleep(30.0, sleep)) for _ in range(3)]
    await wait_for(lambda: len(sleep.delays) == 3, message="three waits")
    signal.wake()
    assert await asyncio.gather(*waits) == [True, True, True]
    later = asyncio.create_task(signal.sleep(30.0, sleep))
    await wait_for(lambda: len(sleep.delays) == 4, message="a later wait")
    await asyncio.sleep(0)
    assert not later.done()  # the wake-up was before it began
    later.cancel()
    with pytest.raises(asyncio.CancelledError):
        await later


async def test_cancelling_a_wait_leaves_no_task_behind() -> None:
    before = len(asyncio.all_tasks())
    sleep = EndlessSleep()
    wait = asyncio.create_task(RetrySignal().sleep(30.0, sleep))
    await wait_for(lambda: sleep.delays, message="waiting")
    wait.cancel()
    with pytest.raises(asyncio.CancelledError):
        await wait
    await asyncio.sleep(0)
    assert len(asyncio.all_tasks()) == before


async def test_the_reflector_retries_at_once_when_woken_and_its_backoff_keeps_growing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [0.0]
    sleep = EndlessSleep()
    signal = RetrySignal()
    reflector = Reflector(
        ApiClient(RestConfig(host="http://127.0.0.1:1")),
        PODS,
        sink=None,  # type: ignore[arg-type]
        backoff=Backoff(jitter=0.0, clock=lambda: now[0]),
        wakeup=signal,
        sleep=sleep,
    )
    attempts: list[float] = []

    async def refused() -> None:
        attempts.append(now[0])
        raise ConnectionRefusedError("connection refused")

    monkeypatch.setattr(reflector, "list_and_watch", refused)
    running = asyncio.create_task(reflector.run())
    try:
        for waits in (1, 2, 3):
            await wait_for(functools.partial(sleep.waited, waits), message="waiting out the backoff")
            now[0] += 1.0  # a second later the probe sees the server answer again
            signal.wake()
        await wait_for(lambda: len(attempts) == 4, message="a retry per wake-up")
        # Each wait ended early, yet the delays still doubled: a retry that fails again waits longer.
        assert sleep.delays[:3] == pytest.approx([0.8, 1.6, 3.2])
        assert reflector.last_error == "ConnectionRefusedError: connection refused"
    finally:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)


def test_the_factory_shares_one_signal_between_its_reflectors() -> None:
    factory = InformerFactory(ApiClient(RestConfig(host="http://127.0.0.1:1")))
    pods = factory.informer(PODS)
    others = factory.informer(PODS, namespace="kube-system")
    assert pods.reflector.wakeup is others.reflector.wakeup is factory.wakeup
    wakes = factory.wakeup.wakes
    factory.retry_now()
    assert factory.wakeup.wakes == wakes + 1
