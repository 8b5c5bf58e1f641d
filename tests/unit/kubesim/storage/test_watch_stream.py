"""A watch's buffer (`WatchStream`): `wait_until` returns on a push, on close and at its time, and keeps one
timer from batch to batch while the time stays the same."""

from __future__ import annotations

import asyncio

import pytest

from kubesim.storage.watch import WatchStream


async def _scenario() -> None:
    loop = asyncio.get_running_loop()
    stream = WatchStream()
    when = loop.time() + 5
    waiting = asyncio.create_task(stream.wait_until(when))
    await asyncio.sleep(0)
    timer = stream._timer
    assert timer is not None and timer.when() == when
    stream.push(b"a\n")
    await asyncio.wait_for(waiting, 1)  # woken by the push, long before its time
    assert stream.drain() == b"a\n"
    waiting = asyncio.create_task(stream.wait_until(when))
    await asyncio.sleep(0)
    assert stream._timer is timer  # the same deadline: the same timer
    stream.close()
    await asyncio.wait_for(waiting, 1)
    stream.stop_timer()
    assert timer.cancelled()


async def _times_out() -> None:
    loop = asyncio.get_running_loop()
    quiet = WatchStream()
    started = loop.time()
    await asyncio.wait_for(quiet.wait_until(started + 0.05), 1)  # nothing comes: returns at its time
    assert loop.time() >= started + 0.04
    assert quiet._timer is None  # it rang
    await asyncio.wait_for(quiet.wait_until(loop.time() - 1), 1)  # a time already past: at once


def test_wait_until_wakes_on_push_and_close_with_one_timer() -> None:
    asyncio.run(_scenario())


@pytest.mark.slow
def test_wait_until_returns_at_its_time() -> None:
    asyncio.run(_times_out())
