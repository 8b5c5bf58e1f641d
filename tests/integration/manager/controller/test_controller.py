"""A toy controller on ConfigMaps against kubesim over HTTP: the reconcile contract end to end."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator
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
    ItemExponentialFailureRateLimiter,
    Owns,
    RateLimitingQueue,
    Request,
    Result,
    SecondaryQueue,
    TerminalError,
    Watches,
    WatchesWith,
)
from manager.client.rest import create_client
from manager.config.settings import Settings
from tests.helpers import wait_for

SELECTOR = "app=toy"


class Toy(Controller):
    """Behaviour per ConfigMap `data.mode`: ok, requeue (3x), fail (2x), terminal, crash, cancel, gated."""

    name = "toy-controller"
    concurrency = 4
    rate_limiter = staticmethod(lambda: ItemExponentialFailureRateLimiter[Request](0.05, 1.0))
    watches = (For(CONFIGMAPS, label_selector=SELECTOR),)

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.calls: dict[str, list[float]] = {}
        self.cache_size_at_first_call: int | None = None
        self.in_flight: set[str] = set()
        self.overlap = False
        self.context_seen: list[dict[str, Any]] = []
        self.gate = asyncio.Event()
        self.gate.set()

    async def reconcile(self, request: Request) -> Result | None:
        loop = asyncio.get_running_loop()
        if self.cache_size_at_first_call is None:
            self.cache_size_at_first_call = len(self.lister(CONFIGMAPS))
        calls = self.calls.setdefault(request.key, [])
        calls.append(loop.time())
        self.context_seen.append(structlog.contextvars.get_contextvars())
        obj = self.lister(CONFIGMAPS).get_by_key(request.key)
        if obj is None:
            return None
        mode = obj.get("data", {}).get("mode", "ok")
        self.overlap |= request.key in self.in_flight
        self.in_flight.add(request.key)
        try:
            if mode == "requeue" and len(calls) < 3:
                return Result(requeue_after=0.2)
            if mode == "fail" and len(calls) < 3:
                raise RuntimeError("transient failure")
            if mode == "terminal":
                raise TerminalError("cannot ever work")
            if mode == "crash":
                raise KeyError("a bug")
            if mode == "cancel" and len(calls) < 2:
                raise asyncio.CancelledError("leaked from an awaited task")
            if mode == "gated":
                await self.gate.wait()
            if mode == "weird" and len(calls) < 2:
                return "done"  # type: ignore[return-value]  # a bug: not a Result
            return None
        finally:
            self.in_flight.discard(request.key)


def configmap(name: str, mode: str, **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "toy"}},
        "data": {"mode": mode, **data},
    }


class Harness:
    def __init__(self, client: ApiClient, controller: Toy) -> None:
        self.client = client
        self.controller = controller
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.task = asyncio.create_task(self.controller.run())

    async def create(self, name: str, mode: str, **data: str) -> None:
        await self.client.create(CONFIGMAPS, configmap(name, mode, **data))


@pytest.fixture
async def harness(kubesim: Any) -> AsyncIterator[Harness]:
    client = await create_client(master=kubesim.url)
    factory = InformerFactory(client)
    ctx = ControllerContext(
        settings=Settings(), health=None, logger=structlog.get_logger(), client=client, informers=factory
    )
    h = Harness(client, Toy(ctx))
    yield h
    if h.task is not None:
        h.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await h.task
    await factory.shutdown()
    await client.close()


def metric(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, {"controller": "toy-controller", **labels}) or 0.0


async def test_reconcile_runs_after_sync_for_existing_objects(harness: Harness) -> None:
    for i in range(5):
        await harness.create(f"pre-{i}", "ok")
    harness.start()
    ctl = harness.controller
    await wait_for(lambda: len(ctl.calls) == 5, message="every pre-existing object reconciled")
    assert ctl.cache_size_at_first_call == 5  # workers started only once the cache held the full list
    await harness.create("later", "ok")
    await wait_for(lambda: "default/later" in ctl.calls, message="a new object reconciled")
    ctx = ctl.context_seen[0]
    assert ctx["controller"] == "toy-controller" and ctx["key"].startswith("default/")
    assert (
        REGISTRY.get_sample_value(
            "controller_runtime_max_concurrent_reconciles", {"controller": "toy-controller"}
        )
        == 4
    )


async def test_requeue_after_delays_the_next_reconcile(harness: Harness) -> None:
    before = metric("controller_runtime_reconcile_total", result="requeue_after")
    await harness.create("rq", "requeue")
    harness.start()
    ctl = harness.controller
    await wait_for(lambda: len(ctl.calls.get("default/rq", [])) == 3, message="three reconciles")
    times = ctl.calls["default/rq"]
    assert all(b - a >= 0.19 for a, b in itertools.pairwise(times)), times
    assert metric("controller_runtime_reconcile_total", result="requeue_after") - before == 2
    assert ctl.queue.num_requeues(Request("default", "rq")) == 0


async def test_exception_means_rate_limited_retry_then_forget(harness: Harness) -> None:
    errors_before = metric("controller_runtime_reconcile_errors_total")
    await harness.create("flaky", "fail")
    harness.start()
    ctl = harness.controller
    await wait_for(lambda: len(ctl.calls.get("default/flaky", [])) == 3, message="two failures, one success")
    t = ctl.calls["default/flaky"]
    assert t[1] - t[0] >= 0.045 and t[2] - t[1] >= 0.095  # 50 ms, then 100 ms (per-item exponential)
    assert metric("controller_runtime_reconcile_errors_total") - errors_before == 2
    await wait_for(lambda: ctl.queue.num_requeues(Request("default", "flaky")) == 0, message="forgotten")


async def test_terminal_error_is_counted_not_retried(harness: Harness) -> None:
    before = metric("controller_runtime_terminal_reconcile_errors_total")
    await harness.create("doomed", "terminal")
    await harness.create("marker", "ok")
    harness.start()
    ctl = harness.controller
    await wait_for(lambda: metric("controller_runtime_terminal_reconcile_errors_total") - before == 1)
    await wait_for(lambda: "default/marker" in ctl.calls)
    # A retry would be scheduled in the same step as the count: the key would now wait out its backoff.
    doomed = Request("default", "doomed")
    assert ctl.queue.waiting == 0 and doomed not in ctl.queue._dirty and len(ctl.queue) == 0
    assert len(ctl.calls["default/doomed"]) == 1
    assert ctl.queue.num_requeues(doomed) == 0


async def test_crashing_reconciles_never_kill_workers(harness: Harness) -> None:
    panics_before = metric("controller_runtime_reconcile_panics_total")
    for i in range(8):  # twice as many crashing keys as workers
        await harness.create(f"crash-{i}", "crash")
        await harness.create(f"cancel-{i}", "cancel")  # a stray CancelledError must not end a worker
        await harness.create(f"weird-{i}", "weird")  # nor a return value that is not a Result
    harness.start()
    ctl = harness.controller
    await wait_for(
        lambda: all(len(ctl.calls.get(f"default/crash-{i}", [])) >= 2 for i in range(8)),
        message="every crashing key retried",
    )
    await wait_for(
        lambda: all(len(ctl.calls.get(f"default/cancel-{i}", [])) == 2 for i in range(8)),
        message="every key that leaked a CancelledError retried once",
    )
    await wait_for(
        lambda: all(len(ctl.calls.get(f"default/weird-{i}", [])) == 2 for i in range(8)),
        message="every key whose reconcile returned a non-Result retried once",
    )
    assert ctl.stats.last_error is not None
    for i in range(10):
        await harness.create(f"fine-{i}", "ok")
    await wait_for(
        lambda: all(f"default/fine-{i}" in ctl.calls for i in range(10)),
        message="healthy keys still reconciled after many crashes",
    )
    assert metric("controller_runtime_reconcile_panics_total") - panics_before >= 24
    assert harness.task is not None and not harness.task.done()


async def test_one_key_is_never_reconciled_by_two_workers_at_once(harness: Harness) -> None:
    ctl = harness.controller
    ctl.gate = asyncio.Event()
    await harness.create("hot", "gated", n="0")
    harness.start()
    await wait_for(lambda: "default/hot" in ctl.in_flight, message="first reconcile in flight")
    for n in range(1, 30):  # a stream of updates while the key is being reconciled, 3 workers idle
        await harness.client.patch(CONFIGMAPS, "hot", {"data": {"n": str(n)}}, "default")
    hot = Request("default", "hot")
    await wait_for(lambda: hot in ctl.queue._dirty, message="the updates re-dirtied the key")
    await wait_for(lambda: (ctl.lister(CONFIGMAPS).get_by_key("default/hot") or {})["data"]["n"] == "29")
    assert len(ctl.calls["default/hot"]) == 1  # parked, not handed to an idle worker
    ctl.gate.set()
    await wait_for(
        lambda: len(ctl.calls["default/hot"]) == 2 and not ctl.queue.processing,
        message="exactly one more reconcile",
    )
    assert not ctl.overlap
    assert len(ctl.queue) == 0


async def test_run_is_restartable(harness: Harness) -> None:
    harness.start()
    ctl = harness.controller
    await harness.create("first", "ok")
    await wait_for(lambda: "default/first" in ctl.calls)
    assert harness.task is not None
    harness.task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await harness.task
    await harness.create("while-down", "ok")
    harness.start()  # the supervisor calls run() again on the same instance
    await wait_for(lambda: "default/while-down" in ctl.calls, message="events queued while down are handled")


async def test_stopping_makes_workers_return(harness: Harness) -> None:
    harness.start()
    ctl = harness.controller
    await harness.create("one", "ok")
    await wait_for(lambda: "default/one" in ctl.calls)
    ctl.ctx.stopping.set()
    assert harness.task is not None
    await asyncio.wait_for(harness.task, 5)
    assert ctl.queue.shutting_down()


# ---------------------------------------------------------------- event → key mappings


def owned(name: str, owner_kind: str, owner_api_version: str, controller: bool = True) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "ownerReferences": [
                {
                    "kind": owner_kind,
                    "apiVersion": owner_api_version,
                    "name": f"owner-of-{name}",
                    "uid": "u",
                    "controller": controller,
                }
            ],
        }
    }


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (owned("a", "Widget", "example.com/v1"), [Request("ns", "owner-of-a")]),
        (owned("b", "Widget", "example.com/v2"), [Request("ns", "owner-of-b")]),  # any version of the group
        (owned("c", "Widget", "other.io/v1"), []),
        (owned("d", "Gadget", "example.com/v1"), []),
        (owned("e", "Widget", "example.com/v1", controller=False), []),
        ({"metadata": {"name": "orphan", "namespace": "ns"}}, []),
    ],
    ids=["same-version", "other-version", "other-group", "other-kind", "not-controller", "orphan"],
)
def test_enqueue_for_owner(obj: dict[str, Any], expected: list[Request]) -> None:
    from manager.controller.handlers import EnqueueForOwner

    seen: list[Request] = []
    handler = EnqueueForOwner(seen.append, "Widget", "example.com")
    handler.on_add(obj, False)
    assert seen == expected


def test_owner_change_enqueues_old_and_new_owner_and_tombstones_unwrap() -> None:
    from manager import DeletedFinalStateUnknown
    from manager.controller.handlers import EnqueueForObject, EnqueueForOwner, EnqueueMapped

    seen: list[Request] = []
    owners = EnqueueForOwner(seen.append, "Widget", "example.com")
    old, new = owned("x", "Widget", "example.com/v1"), owned("x", "Widget", "example.com/v1")
    new["metadata"]["ownerReferences"][0]["name"] = "new-owner"
    owners.on_update(old, new)
    assert seen == [Request("ns", "owner-of-x"), Request("ns", "new-owner")]
    seen.clear()
    owners.on_delete(DeletedFinalStateUnknown("ns/x", old))
    EnqueueForObject(seen.append).on_delete(DeletedFinalStateUnknown("ns/x", old))
    mapped = EnqueueMapped(seen.append, lambda o: [Request("ns", o["metadata"]["name"] + "-mapped")])
    mapped.on_update(old, new)
    assert seen == [Request("ns", "owner-of-x"), Request("ns", "x"), Request("ns", "x-mapped")]


class OwnerMapper(Controller):
    """Owns() and Watches(resource, map_fn) wired through real informers."""

    name = "owner-mapper-controller"
    watches = (
        For(CONFIGMAPS, label_selector="app=primary"),
        Owns(CONFIGMAPS, kind="ConfigMap", api_version="v1", label_selector="app=child"),
        Watches(
            CONFIGMAPS, lambda obj: [Request("default", obj["data"]["target"])], label_selector="app=pointer"
        ),
    )

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.keys: list[str] = []

    async def reconcile(self, request: Request) -> Result | None:
        self.keys.append(request.key)
        return None


async def test_owns_and_map_fn_through_informers(kubesim: Any) -> None:
    client = await create_client(master=kubesim.url)
    factory = InformerFactory(client)
    ctl = OwnerMapper(
        ControllerContext(
            settings=Settings(), health=None, logger=structlog.get_logger(), client=client, informers=factory
        )
    )
    task = asyncio.create_task(ctl.run())
    try:
        parent = await client.create(
            CONFIGMAPS,
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "parent", "namespace": "default", "labels": {"app": "primary"}},
            },
        )
        await wait_for(lambda: "default/parent" in ctl.keys)
        await client.create(
            CONFIGMAPS,
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": "kid",
                    "namespace": "default",
                    "labels": {"app": "child"},
                    "ownerReferences": [
                        {
                            "apiVersion": "v1",
                            "kind": "ConfigMap",
                            "name": "other-parent",
                            "uid": parent["metadata"]["uid"],
                            "controller": True,
                        }
                    ],
                },
            },
        )
        await client.create(
            CONFIGMAPS,
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "ptr", "namespace": "default", "labels": {"app": "pointer"}},
                "data": {"target": "aimed"},
            },
        )
        await wait_for(lambda: {"default/other-parent", "default/aimed"} <= set(ctl.keys))
        assert "default/kid" not in ctl.keys and "default/ptr" not in ctl.keys
        # The built-in enqueue handlers are inline; a map function is user code and keeps its buffer.
        assert [r.inline for r in ctl.registrations()] == [True, True, False]
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await factory.shutdown()
        await client.close()


# ------------------------------------------------ secondary queues, wait_for_sync, typed handlers


class LabelCounter:
    """A handler class taking the concrete controller: `WatchesWith(resource, handler)` needs no cast."""

    def __init__(self, ctl: Sidecar) -> None:
        self.ctl = ctl

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self.ctl.side.add(obj["metadata"]["name"])

    def on_update(self, old: Any, new: Any) -> None:
        self.ctl.side.add(new["metadata"]["name"])

    def on_delete(self, obj: Any) -> None:
        pass


class Sidecar(Controller):
    """A key queue plus a secondary `sidecar` queue fed by a typed handler; items named fail-* fail twice."""

    name = "sidecar-controller"
    watches = (
        For(CONFIGMAPS, label_selector="app=primary"),
        WatchesWith(CONFIGMAPS, LabelCounter, label_selector="app=side"),
    )

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.side: RateLimitingQueue[str] = RateLimitingQueue(
            "sidecar", rate_limiter=ItemExponentialFailureRateLimiter(0.02, 0.1)
        )
        self.handled: dict[str, int] = {}
        self.cache_size_at_first_item: int | None = None
        self.gate = asyncio.Event()
        self.gate.set()

    def secondary_queues(self) -> tuple[SecondaryQueue[str], ...]:
        return (SecondaryQueue(self.side, self.handle_side, workers=2),)

    async def handle_side(self, name: str) -> None:
        if self.cache_size_at_first_item is None:
            self.cache_size_at_first_item = len(self.lister(CONFIGMAPS, label_selector="app=side"))
        await self.gate.wait()
        self.handled[name] = self.handled.get(name, 0) + 1
        if name.startswith("fail-") and self.handled[name] < 3:
            raise RuntimeError("transient")

    async def reconcile(self, request: Request) -> Result | None:
        return None


def side_configmap(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "side"}},
    }


@pytest.fixture
async def sidecar(kubesim: Any) -> AsyncIterator[tuple[ApiClient, Sidecar]]:
    client = await create_client(master=kubesim.url)
    factory = InformerFactory(client)
    ctl = Sidecar(
        ControllerContext(
            settings=Settings(), health=None, logger=structlog.get_logger(), client=client, informers=factory
        )
    )
    yield client, ctl
    await factory.shutdown()
    await client.close()


async def test_secondary_queue_runs_after_sync_and_retries_with_its_rate_limiter(
    sidecar: tuple[ApiClient, Sidecar],
) -> None:
    client, ctl = sidecar
    for i in range(5):
        await client.create(CONFIGMAPS, side_configmap(f"before-{i}"))
    task = asyncio.create_task(ctl.run())
    try:
        await ctl.wait_for_sync()
        assert ctl.informer(CONFIGMAPS, label_selector="app=side").has_synced()
        await wait_for(lambda: all(f"before-{i}" in ctl.handled for i in range(5)))
        assert ctl.cache_size_at_first_item == 5, "secondary workers start only after the informers synced"
        await client.create(CONFIGMAPS, side_configmap("fail-once"))
        await wait_for(lambda: ctl.handled.get("fail-once") == 3, message="retried until it succeeds")
        await wait_for(lambda: ctl.side.num_requeues("fail-once") == 0, message="success forgets failures")
        assert all(ctl.handled[f"before-{i}"] == 1 for i in range(5))
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_drain_and_stopping_end_the_secondary_queue(sidecar: tuple[ApiClient, Sidecar]) -> None:
    client, ctl = sidecar
    task = asyncio.create_task(ctl.run())
    await ctl.wait_for_sync()
    ctl.gate.clear()
    await client.create(CONFIGMAPS, side_configmap("in-flight"))
    await wait_for(lambda: "in-flight" in ctl.side.processing)
    drained = asyncio.create_task(ctl.drain())
    await asyncio.sleep(0)
    assert not drained.done(), "drain waits for the item in flight"
    ctl.gate.set()
    await asyncio.wait_for(drained, 5)
    assert ctl.handled["in-flight"] == 1 and ctl.side.shutting_down()
    ctl.ctx.stopping.set()
    await asyncio.wait_for(task, 5)
