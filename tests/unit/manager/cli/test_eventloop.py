"""`--event-loop`: which loop the daemon gets, and what it says when the choice cannot be honoured."""

from __future__ import annotations

import asyncio

import pytest
import uvloop

from manager.cli.eventloop import EventLoopUnavailable, loop_factory


def test_auto_takes_uvloop_when_it_is_installed() -> None:
    name, factory = loop_factory("auto")
    assert name == "uvloop" and factory is not None
    loop = factory()
    try:
        assert isinstance(loop, uvloop.Loop)
    finally:
        loop.close()


def test_asyncio_keeps_the_default_loop() -> None:
    assert loop_factory("asyncio") == ("asyncio", None)


def test_auto_falls_back_to_asyncio_without_uvloop() -> None:
    assert loop_factory("auto", module="no_such_uvloop") == ("asyncio", None)


def test_uvloop_asked_for_but_missing_names_the_flag() -> None:
    with pytest.raises(EventLoopUnavailable, match="--event-loop=uvloop: uvloop cannot be imported"):
        loop_factory("uvloop", module="no_such_uvloop")


def test_a_runner_on_the_factory_runs_coroutines_on_uvloop() -> None:
    _, factory = loop_factory("uvloop")

    async def which() -> str:
        await asyncio.sleep(0)
        return type(asyncio.get_running_loop()).__module__

    with asyncio.Runner(loop_factory=factory) as runner:
        assert runner.run(which()).startswith("uvloop")
