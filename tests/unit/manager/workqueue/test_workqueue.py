"""Work-queue semantics, as client-go's own queue tests state them (a table of operation scripts + cases)."""

from __future__ import annotations

import asyncio

import pytest

from manager.workqueue import (
    DelayingQueue,
    FakeClock,
    ItemExponentialFailureRateLimiter,
    Queue,
    QueueShutDown,
    RateLimitingQueue,
)
from manager.workqueue.delaying import MAX_SLACK

# Each script: operations on one queue; "add x", "get" (expects the next item, written "get x"), "done x",
# "len n" (asserts the queue length). Mirrors client-go queue_test.go cases.
SCRIPTS = {
    "fifo order": ["add a", "add b", "add c", "get a", "get b", "get c", "len 0"],
    "dedup before processing": ["add a", "add a", "add b", "add a", "len 2", "get a", "get b", "len 0"],
    "re-add while processing parks the item": [
        "add a",
        "get a",
        "add a",
        "len 0",
        "done a",
        "len 1",
        "get a",
    ],
    "many re-adds while processing requeue once": [
        "add a",
        "get a",
        "add a",
        "add a",
        "add a",
        "done a",
        "len 1",
        "get a",
        "done a",
        "len 0",
    ],
    "reinsert (client-go TestReinsert)": ["add foo", "get foo", "add foo", "done foo", "len 1", "get foo"],
    "done without re-add leaves nothing": ["add a", "get a", "done a", "len 0"],
    "parked item keeps its place after others": [
        "add a",
        "get a",
        "add a",
        "add b",
        "done a",
        "get b",
        "get a",
    ],
}


@pytest.mark.parametrize("script", SCRIPTS.values(), ids=SCRIPTS.keys())
async def test_queue_script(script: list[str]) -> None:
    queue: Queue[str] = Queue()
    for step in script:
        op, arg = step.split(" ", 1) if " " in step else (step, "")
        if op == "add":
            queue.add(arg)
        elif op == "get":
            assert await asyncio.wait_for(queue.get(), 1) == arg, step
        elif op == "done":
            queue.done(arg)
        elif op == "len":
            assert len(queue) == int(arg), step


async def test_one_key_never_processed_by_two_workers() -> None:
    queue: Queue[int] = Queue()
    in_flight: set[int] = set()
    processed = 0
    overlap = False

    async def worker() -> None:
        nonlocal processed, overlap
        while True:
            try:
                item = await queue.get()
            except QueueShutDown:
                return
            overlap |= item in in_flight
            in_flight.add(item)
            await asyncio.sleep(0)
            queue.add(item % 3)  # keep re-adding keys that are being processed
            in_flight.discard(item)
            processed += 1
            queue.done(item)

    workers = [asyncio.create_task(worker()) for _ in range(8)]
    for i in range(300):
        queue.add(i % 5)
        await asyncio.sleep(0)
    await asyncio.sleep(0)
    queue.shut_down()
    await asyncio.wait_for(asyncio.gather(*workers), 5)
    assert not overlap
    assert processed > 5


async def test_basic_many_producers_and_consumers() -> None:
    """client-go TestBasic: 50 producers x 50 items, 10 consumers; everything is processed."""
    queue: Queue[int] = Queue()
    seen: list[int] = []

    async def producer(base: int) -> None:
        for i in range(50):
            queue.add(base * 100 + i)
            await asyncio.sleep(0)

    async def consumer() -> None:
        while True:
            try:
                item = await queue.get()
            except QueueShutDown:
                return
            seen.append(item)
            queue.done(item)

    consumers = [asyncio.create_task(consumer()) for _ in range(10)]
    await asyncio.gather(*(producer(p) for p in range(50)))
    queue.shut_down()
    await asyncio.wait_for(asyncio.gather(*consumers), 5)
    assert sorted(seen) == sorted(p * 100 + i for p in range(50) for i in range(50))


async def test_shutdown_drains_queued_items_then_raises() -> None:
    queue: Queue[str] = Queue()
    queue.add("a")
    queue.add("b")
    queue.shut_down()
    queue.add("c")  # ignored once shutting down
    assert queue.shutting_down()
    assert await queue.get() == "a"
    assert await queue.get() == "b"
    with pytest.raises(QueueShutDown):
        await queue.get()


async def test_shutdown_wakes_blocked_getters() -> None:
    queue: Queue[str] = Queue()
    getters = [asyncio.create_task(queue.get()) for _ in range(3)]
    await asyncio.sleep(0)
    queue.shut_down()
    results = await asyncio.wait_for(asyncio.gather(*getters, return_exceptions=True), 1)
    assert all(isinstance(r, QueueShutDown) for r in results)


async def test_shut_down_with_drain_waits_for_processing() -> None:
    queue: Queue[str] = Queue()
    queue.add("a")
    queue.add("b")
    a = await queue.get()
    b = await queue.get()
    drain = asyncio.create_task(queue.shut_down_with_drain())
    await asyncio.sleep(0)
    queue.done(a)
    await asyncio.sleep(0)
    assert not drain.done()
    queue.done(b)
    await asyncio.wait_for(drain, 1)


async def test_shut_down_aborts_a_pending_drain() -> None:
    """client-go TestForceQueueShutdownUsingShutDown: ShutDown after ShutDownWithDrain stops the wait."""
    queue: Queue[str] = Queue()
    queue.add("a")
    await queue.get()
    drain = asyncio.create_task(queue.shut_down_with_drain())
    await asyncio.sleep(0)
    assert not drain.done()
    queue.shut_down()
    await asyncio.wait_for(drain, 1)


async def test_cancelled_getter_passes_its_wakeup_on() -> None:
    queue: Queue[str] = Queue()
    first = asyncio.create_task(queue.get())
    second = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    queue.add("x")
    first.cancel()  # woken, but cancelled before it could take the item
    assert await asyncio.wait_for(second, 1) == "x"


# ---------------------------------------------------- delaying queue (client-go delaying_queue_test)


async def test_add_after_becomes_ready_only_when_due() -> None:
    clock = FakeClock()
    queue: DelayingQueue[str] = DelayingQueue(clock=clock)
    queue.add_after("foo", 0.05)
    assert len(queue) == 0 and queue.waiting == 1
    clock.step(0.049)
    assert len(queue) == 0
    clock.step(0.001)
    assert len(queue) == 1 and queue.waiting == 0
    assert await queue.get() == "foo"


DELAY_CASES = {
    # (adds as (item, delay) in order, steps, expected queue contents after each step)
    "re-adding later keeps the earlier time": (
        [("foo", 0.05), ("foo", 0.07)],
        [0.06, 0.02],
        [["foo"], ["foo"]],
    ),
    "re-adding earlier moves it earlier": ([("foo", 0.05), ("foo", 0.02)], [0.021, 0.05], [["foo"], ["foo"]]),
    "two items fire in ready order": (
        [("foo", 0.05), ("bar", 0.02)],
        [0.03, 0.03],
        [["bar"], ["bar", "foo"]],
    ),
    "ordering by ready time not by insertion": (
        [("a", 0.3), ("b", 0.1), ("c", 0.2), ("d", 0.05)],
        [1.0],
        [["d", "b", "c", "a"]],
    ),
    "zero delay adds at once": ([("now", 0.0)], [0.0], [["now"]]),
}


@pytest.mark.parametrize(("adds", "steps", "expected"), DELAY_CASES.values(), ids=DELAY_CASES.keys())
async def test_delaying_table(
    adds: list[tuple[str, float]], steps: list[float], expected: list[list[str]]
) -> None:
    clock = FakeClock()
    queue: DelayingQueue[str] = DelayingQueue(clock=clock)
    for item, delay in adds:
        queue.add_after(item, delay)
    for step, contents in zip(steps, expected, strict=True):
        clock.step(step)
        assert list(queue._queue) == contents
    assert queue.waiting == 0


async def test_items_due_close_together_go_out_in_one_wake_up_never_early() -> None:
    clock = FakeClock()
    queue: DelayingQueue[str] = DelayingQueue(clock=clock)
    fired: list[float] = []
    on_timer = queue._on_timer

    def counting() -> None:
        fired.append(clock.now())
        on_timer()

    queue._on_timer = counting  # type: ignore[method-assign]
    for item, delay in (("a", 1.0), ("b", 1.004), ("c", 1.011), ("alone", 2.0)):
        queue.add_after(item, delay)
    clock.step(1.0)
    assert len(queue) == 0  # "a" is due but "b" follows within a's slack: the timer waits for it
    clock.step(0.02)
    assert list(queue._queue) == ["a", "b", "c"] and fired == [pytest.approx(1000 + 1.0 + MAX_SLACK)]
    clock.step(0.979)
    assert len(queue) == 3  # a lone item is not held back, nor handed out early
    clock.step(0.001)
    assert list(queue._queue)[-1] == "alone" and len(fired) == 2


async def test_a_caller_given_slack_replaces_the_default() -> None:
    clock = FakeClock()
    queue: DelayingQueue[str] = DelayingQueue(clock=clock)
    queue.add_after("a", 1.0, slack=0.1)
    queue.add_after("b", 1.08)  # within a's 100 ms (beyond the default 20 ms)
    clock.step(1.09)
    assert len(queue) == 0
    clock.step(0.011)
    assert list(queue._queue) == ["a", "b"]


async def test_a_short_delay_keeps_its_own_time_beside_long_ones() -> None:
    clock = FakeClock()
    queue: DelayingQueue[str] = DelayingQueue(clock=clock)
    queue.add_after("batched", 1.0)
    queue.add_after("retry", 0.005)  # earlier than the armed timer: re-armed at its own time
    clock.step(0.005)
    assert list(queue._queue) == ["retry"]
    clock.step(0.995)
    assert list(queue._queue) == ["retry", "batched"]


async def test_add_after_with_real_loop_clock() -> None:
    queue: DelayingQueue[str] = DelayingQueue()
    loop = asyncio.get_running_loop()
    start = loop.time()
    queue.add_after("x", 0.05)
    assert await asyncio.wait_for(queue.get(), 2) == "x"
    assert loop.time() - start >= 0.045


async def test_shutdown_drops_waiting_items_and_timers() -> None:
    clock = FakeClock()
    queue: DelayingQueue[str] = DelayingQueue(clock=clock)
    queue.add_after("x", 1)
    queue.shut_down()
    queue.add_after("y", 1)
    clock.step(5)
    assert len(queue) == 0 and queue.waiting == 0


# ------------------------------------------------------------------ rate-limiting queue


async def test_rate_limited_adds_back_off_exponentially_and_forget_resets() -> None:
    clock = FakeClock()
    queue: RateLimitingQueue[str] = RateLimitingQueue(
        clock=clock, rate_limiter=ItemExponentialFailureRateLimiter(0.001, 1.0)
    )
    queue.add_rate_limited("one")
    clock.step(0.0009)
    assert len(queue) == 0
    clock.step(0.0001)
    assert len(queue) == 1
    queue.done(await queue.get())
    queue.add_rate_limited("one")  # 2 ms now
    queue.add_rate_limited("two")
    assert queue.num_requeues("one") == 2 and queue.num_requeues("two") == 1
    clock.step(0.0015)
    assert list(queue._queue) == ["two"]
    clock.step(0.0005)
    assert list(queue._queue) == ["two", "one"]
    queue.forget("one")
    assert queue.num_requeues("one") == 0
    assert queue.num_requeues("two") == 1


async def test_default_queue_uses_controller_limiter() -> None:
    queue: RateLimitingQueue[str] = RateLimitingQueue(clock=FakeClock())
    assert queue.rate_limiter.when("k") == pytest.approx(0.005)
    assert queue.rate_limiter.when("k") == pytest.approx(0.010)


# ------------------------------------------------------------------ metrics (only for named queues)


async def test_named_queue_exports_workqueue_metrics() -> None:
    from prometheus_client import REGISTRY

    clock = FakeClock()
    queue: RateLimitingQueue[str] = RateLimitingQueue("unit_metrics_q", clock=clock)

    def sample(metric: str) -> float | None:
        return REGISTRY.get_sample_value(metric, {"name": "unit_metrics_q"})

    queue.add("a")
    queue.add("a")
    queue.add("b")
    assert sample("workqueue_adds_total") == 2
    assert sample("workqueue_depth") == 2
    clock.step(0.5)
    item = await queue.get()
    assert sample("workqueue_depth") == 1
    assert sample("workqueue_queue_duration_seconds_count") == 1
    assert sample("workqueue_queue_duration_seconds_sum") == pytest.approx(0.5)
    clock.step(2)
    assert sample("workqueue_unfinished_work_seconds") == pytest.approx(2)
    assert sample("workqueue_longest_running_processor_seconds") == pytest.approx(2)
    queue.done(item)
    assert sample("workqueue_work_duration_seconds_count") == 1
    assert (
        REGISTRY.get_sample_value(
            "workqueue_work_duration_seconds_bucket", {"name": "unit_metrics_q", "le": "10.0"}
        )
        == 1
    )
    queue.add_rate_limited("c")
    assert sample("workqueue_retries_total") == 1


async def test_unnamed_queue_has_no_metrics() -> None:
    from prometheus_client import REGISTRY

    queue: Queue[str] = Queue()
    queue.add("x")
    assert queue._metrics is None
    assert REGISTRY.get_sample_value("workqueue_adds_total", {"name": ""}) is None
