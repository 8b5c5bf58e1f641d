"""Slow-start batches (upstream: `slowStartBatch` in pkg/controller/replicaset/replica_set.go; the Job
controller batches its creates the same way in pkg/controller/job/job_controller.go `manageJob`): run `fn`
`count` times in concurrent batches of 1, 2, 4, …; stop after the first batch in which any call failed, so a
systematic error (quota, bad template) costs a handful of API calls instead of `count`."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

SLOW_START_INITIAL_BATCH_SIZE = 1


@dataclass(frozen=True, slots=True)
class SlowStartResult:
    successes: int
    error: BaseException | None  # the first error of the failing batch, in call order
    skipped: int  # count - successes: failed calls plus calls never made


async def gather_settled(calls: Sequence[Awaitable[object]]) -> list[object]:
    """`asyncio.gather(*calls, return_exceptions=True)`, but a single call is awaited in place: wrapping it
    in a Task buys no concurrency and costs event-loop round trips, and one call is the common
    case (every first slow-start batch, a one-pod Job's finalizer removal). Exceptions are returned as
    results either way; CancelledError and other BaseExceptions propagate (gather's callers re-raise them)."""
    if len(calls) == 1:
        try:
            return [await calls[0]]
        except Exception as exc:
            return [exc]
    return await asyncio.gather(*calls, return_exceptions=True)


async def slow_start_batch(
    count: int,
    fn: Callable[[], Awaitable[object]],
    initial_batch_size: int = SLOW_START_INITIAL_BATCH_SIZE,
) -> SlowStartResult:
    """Call `fn` `count` times in doubling batches; `fn` signals failure by raising an Exception.

    Cancellation is not swallowed: it propagates after the in-flight batch is cancelled."""
    remaining, successes = count, 0
    batch = min(remaining, initial_batch_size)
    while batch > 0:
        results = await gather_settled([fn() for _ in range(batch)])
        errors = [r for r in results if isinstance(r, BaseException)]
        for err in errors:
            if not isinstance(err, Exception):  # CancelledError, KeyboardInterrupt: not a batch failure
                raise err
        successes += batch - len(errors)
        if errors:
            return SlowStartResult(successes, errors[0], count - successes)
        remaining -= batch
        batch = min(2 * batch, remaining)
    return SlowStartResult(successes, None, count - successes)
