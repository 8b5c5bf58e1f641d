"""The reflector under kubesim's faults: dropped watches, compaction (410), 500s and 429s.

After the faults stop, the informer cache must equal the server's state exactly, and a handler that mirrors
the notifications it received must hold every object's final state, with no object the server never had.
Each fault runs with the handler buffered and inline (the controllers' handlers are inline, so their
informers apply watch events one by one).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from typing import Any

import pytest

from manager.apimachinery.resources import CONFIGMAPS
from manager.client import ApiClient, ApiError, NotFound, create_client
from manager.informers import Backoff, DeletedFinalStateUnknown, SharedInformer
from tests.helpers import wait_for

NS = "default"


class Mirror:
    """Rebuilds the server state from notifications alone; remembers every name it was told about."""

    def __init__(self) -> None:
        self.state: dict[str, str] = {}
        self.names: set[str] = set()
        self.tombstones: list[str] = []

    def _put(self, obj: dict[str, Any]) -> None:
        self.names.add(obj["metadata"]["name"])
        self.state[f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"] = obj["metadata"][
            "resourceVersion"
        ]

    def on_add(self, obj: dict[str, Any], is_in_initial_list: bool) -> None:
        self._put(obj)

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self._put(new)

    def on_delete(self, obj: dict[str, Any] | DeletedFinalStateUnknown) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):
            self.tombstones.append(obj.key)
            self.state.pop(obj.key, None)
        else:
            self.state.pop(f"{obj['metadata']['namespace']}/{obj['metadata']['name']}", None)


class Churn:
    """Random creates, updates and deletes of a small set of configmaps, tolerant of injected faults."""

    def __init__(self, client: ApiClient, seed: int) -> None:
        self.client = client
        self.rng = random.Random(seed)
        self.created: set[str] = set()

    async def step(self) -> None:
        name = f"cm-{self.rng.randrange(25)}"
        action = self.rng.random()
        try:
            if action < 0.45:
                await self.client.create(
                    CONFIGMAPS, {"metadata": {"name": name, "namespace": NS}, "data": {}}
                )
                self.created.add(name)
            elif action < 0.8:
                await self.client.patch(CONFIGMAPS, name, {"data": {"n": str(self.rng.random())}}, NS)
            else:
                await self.client.delete(CONFIGMAPS, name, NS)
        except (NotFound, ApiError):
            pass

    async def run(self, steps: int) -> None:
        for _ in range(steps):
            await self.step()


async def server_state(client: ApiClient) -> dict[str, str]:
    listed = await client.list(CONFIGMAPS, NS)
    return {f"{NS}/{i['metadata']['name']}": i["metadata"]["resourceVersion"] for i in listed["items"]}


def cache_state(informer: SharedInformer) -> dict[str, str]:
    return {key: obj["metadata"]["resourceVersion"] for key, obj in informer.indexer.items()}


async def assert_converges(client: ApiClient, informer: SharedInformer, mirror: Mirror, churn: Churn) -> None:
    async def converged() -> bool:
        server = await server_state(client)
        return cache_state(informer) == server and mirror.state == server

    await wait_for(converged, timeout=20, interval=0.1, message="cache and handler equal to the server")
    assert mirror.names <= churn.created, "a handler was told about an object that never existed"
    assert informer.handler_errors == 0


async def delivering_watch(client: ApiClient, informer: SharedInformer, churn: Churn, tag: object) -> None:
    """Wait until the informer's current watch has delivered an event, writing markers until it does."""
    count = 0

    async def delivered() -> bool:
        nonlocal count
        if informer.reflector.watching and informer.reflector.received > 0:
            return True
        count += 1
        name = f"marker-{tag}-{count}"
        await client.create(CONFIGMAPS, {"metadata": {"name": name, "namespace": NS}})
        churn.created.add(name)
        return False

    await wait_for(delivered, timeout=10, interval=0.05, message="a watch delivering events")


@pytest.fixture
async def setup(kubesim: Any) -> Any:
    # qps=0: the churn must not be slowed by the client-side limiter; few retries so faults surface quickly.
    client = await create_client(kubeconfig=kubesim.kubeconfig, qps=0, max_retries=2, max_retry_after=0.05)
    yield client
    await client.close()


@pytest.fixture(params=[False, True], ids=["buffered", "inline"])
def inline(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


def count_one_by_one(informer: SharedInformer) -> list[int]:
    """Counts the events the reflector applies one by one (the path taken when every handler is inline)."""
    count = [0]
    apply_one = informer.apply_one

    def counting(event_type: str, obj: dict[str, Any], stripped: bool = False) -> None:
        count[0] += 1
        apply_one(event_type, obj, stripped)

    informer.apply_one = counting  # type: ignore[method-assign]
    return count


def make_informer(client: ApiClient, use_watch_list: bool = False, **options: Any) -> SharedInformer:
    backoff = Backoff(initial=0.02, maximum=0.2)
    return SharedInformer(
        client, CONFIGMAPS, namespace=NS, use_watch_list=use_watch_list, backoff=backoff, **options
    )


@pytest.mark.parametrize("use_watch_list", [False, True], ids=["list", "watchlist"])
async def test_dropped_watches(setup: ApiClient, kubesim: Any, use_watch_list: bool, inline: bool) -> None:
    client = setup
    churn = Churn(client, seed=1)
    await churn.run(20)
    informer = make_informer(client, use_watch_list)
    mirror = Mirror()
    informer.add_event_handler(mirror, inline=inline)
    one_by_one = count_one_by_one(informer)
    informer.start()
    try:
        assert await informer.wait_for_cache_sync(10)
        for _ in range(15):
            await churn.run(10)
            kubesim.faults.close_watches()
        await assert_converges(client, informer, mirror, churn)
        assert informer.reflector.watches > 5  # every drop was followed by a new watch
        assert (one_by_one[0] > 0) == inline
    finally:
        await informer.stop()


async def test_compaction_gives_410_then_relist(setup: ApiClient, kubesim: Any, inline: bool) -> None:
    client = setup
    churn = Churn(client, seed=2)
    await churn.run(20)
    informer = make_informer(client)
    mirror = Mirror()
    informer.add_event_handler(mirror, inline=inline)
    informer.start()
    try:
        assert await informer.wait_for_cache_sync(10)

        def expired_since(before: int) -> Callable[[], bool]:
            return lambda: informer.reflector.expired > before

        for round_ in range(3):
            # the re-watch is held back while the server moves on and forgets its history: it must get 410
            expired_before = informer.reflector.expired
            # a watch that already delivered events (one closed at once without any is a "very short watch",
            # which relists instead of resuming)
            await delivering_watch(client, informer, churn, round_)
            latency = kubesim.faults.add_latency(0.3, verb="watch", resource="configmaps")
            kubesim.faults.close_watches()
            await churn.run(15)
            kubesim.faults.compact()
            await wait_for(expired_since(expired_before), timeout=15, message="410")
            kubesim.faults.latencies.remove(latency)
            await churn.run(5)
        await assert_converges(client, informer, mirror, churn)
        assert informer.reflector.lists >= 4  # the initial list and one relist per 410
    finally:
        await informer.stop()


async def test_deletions_while_disconnected_become_tombstones(
    setup: ApiClient, kubesim: Any, inline: bool
) -> None:
    client = setup
    for i in range(5):
        await client.create(CONFIGMAPS, {"metadata": {"name": f"t{i}", "namespace": NS}})
    informer = make_informer(client)
    mirror = Mirror()
    informer.add_event_handler(mirror, inline=inline)
    informer.start()
    try:
        assert await informer.wait_for_cache_sync(10)
        rule = kubesim.faults.fail(500, verb="watch", resource="configmaps")
        kubesim.faults.close_watches()
        for i in range(3):
            await client.delete(CONFIGMAPS, f"t{i}", NS)
        kubesim.faults.compact()
        kubesim.faults.errors.remove(rule)
        # A buffered handler runs in its own task: wait for it as well as for the cache.
        await wait_for(lambda: len(informer.indexer) == 2 and len(mirror.tombstones) == 3, timeout=10)
        assert sorted(mirror.tombstones) == [f"{NS}/t0", f"{NS}/t1", f"{NS}/t2"]
        assert sorted(mirror.state) == [f"{NS}/t3", f"{NS}/t4"]
    finally:
        await informer.stop()


@pytest.mark.parametrize("code", [500, 429])
async def test_failing_requests(setup: ApiClient, kubesim: Any, code: int, inline: bool) -> None:
    client = setup
    churn = Churn(client, seed=code)
    await churn.run(10)
    informer = make_informer(client)
    mirror = Mirror()
    informer.add_event_handler(mirror, inline=inline)
    rule = kubesim.faults.fail(
        code, fraction=0.5, verb=["list", "watch"], resource="configmaps", retry_after=0
    )
    informer.start()
    try:
        for _ in range(10):
            await churn.run(8)
            kubesim.faults.close_watches()
            await asyncio.sleep(0)

        async def injected() -> bool:
            # On a loaded machine the reflector may have made few requests so far: each watch ended here
            # is one more request, and one more chance for the fault.
            kubesim.faults.close_watches()
            return bool(rule.injected > 0)

        await wait_for(injected, timeout=10, message="a fault injected into the informer's requests")
        assert rule.injected > 0
        kubesim.faults.clear()
        await assert_converges(client, informer, mirror, churn)
        assert informer.health() is None
    finally:
        await informer.stop()


async def test_unreachable_server_fails_readiness_then_recovers(setup: ApiClient, kubesim: Any) -> None:
    client = setup
    informer = make_informer(client, failure_grace=0.3)
    informer.start()
    try:
        assert await informer.wait_for_cache_sync(10)
        assert informer.health() is None
        kubesim.faults.fail(500, verb=["list", "watch"], resource="configmaps")
        kubesim.faults.close_watches()
        reason = await wait_for(informer.health, timeout=10, message="a failing readiness check")
        assert "failing" in reason
        assert not informer._task.done()  # type: ignore[union-attr]  # backing off, not dead
        kubesim.faults.clear()
        await client.create(CONFIGMAPS, {"metadata": {"name": "after", "namespace": NS}})
        await wait_for(lambda: informer.health() is None and len(informer.indexer) == 1, timeout=10)
    finally:
        await informer.stop()
