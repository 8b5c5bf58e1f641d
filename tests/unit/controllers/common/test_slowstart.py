"""Slow-start batches: sizes 1, 2, 4, …, stop at the first failing batch."""

from __future__ import annotations

import asyncio
from collections.abc import Collection

import pytest

from controllers.common.slowstart import gather_settled, slow_start_batch


class Recorder:
    """Counts calls per batch by watching how many calls are in flight together; fails chosen call numbers."""

    def __init__(self, fail_calls: Collection[int] = ()) -> None:
        self.calls = 0
        self.fail_calls = fail_calls
        self.batches: list[int] = []
        self._in_batch = 0

    async def __call__(self) -> None:
        self.calls += 1
        number = self.calls
        self._in_batch += 1
        await asyncio.sleep(0)  # let the whole batch start before any finishes
        if self._in_batch:
            self.batches.append(self._in_batch)
            self._in_batch = 0
        if number in self.fail_calls:
            raise RuntimeError(f"call {number} failed")


@pytest.mark.parametrize(
    ("count", "batches"),
    [
        (0, []),
        (1, [1]),
        (3, [1, 2]),
        (7, [1, 2, 4]),
        (10, [1, 2, 4, 3]),
        (500, [1, 2, 4, 8, 16, 32, 64, 128, 245]),
    ],
)
async def test_batches_double(count: int, batches: list[int]) -> None:
    rec = Recorder()
    result = await slow_start_batch(count, rec)
    assert rec.batches == batches
    assert (result.successes, result.error, result.skipped) == (count, None, 0)


async def test_stops_after_first_failing_batch() -> None:
    # Call 5 is in the third batch (calls 4..7): that batch completes, nothing after it is attempted.
    rec = Recorder(fail_calls={5, 6})
    result = await slow_start_batch(20, rec)
    assert rec.calls == 7
    assert rec.batches == [1, 2, 4]
    assert result.successes == 5
    assert result.skipped == 15
    assert str(result.error) == "call 5 failed"


async def test_first_call_failing_stops_everything() -> None:
    rec = Recorder(fail_calls={1})
    result = await slow_start_batch(500, rec)
    assert rec.calls == 1
    assert (result.successes, result.skipped) == (0, 500)


async def test_cancellation_propagates() -> None:
    started = asyncio.Event()

    async def hang() -> None:
        started.set()
        await asyncio.Event().wait()

    task = asyncio.create_task(slow_start_batch(3, hang))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


@pytest.mark.parametrize("count", [0, 1, 3])
async def test_gather_settled_returns_results_and_exceptions_in_call_order(count: int) -> None:
    async def call(i: int) -> int:
        await asyncio.sleep(0)
        if i == 0:
            raise RuntimeError("first failed")
        return i

    results = await gather_settled([call(i) for i in range(count)])
    assert [r if isinstance(r, int) else str(r) for r in results] == ["first failed", 1, 2][:count]


async def test_gather_settled_one_call_runs_in_the_callers_task() -> None:
    # The single call is awaited in place (no Task), and cancelling the caller cancels it.
    caller = asyncio.current_task()
    seen: list[asyncio.Task[object] | None] = []

    async def call() -> None:
        seen.append(asyncio.current_task())

    await gather_settled([call()])
    assert seen == [caller]

    started = asyncio.Event()

    async def hang() -> None:
        started.set()
        await asyncio.Event().wait()

    task = asyncio.create_task(gather_settled([hang()]))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
