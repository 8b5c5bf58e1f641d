"""`kubesim --event-loop`: the standalone server serves writes and watches on asyncio's loop and on uvloop's
(the default when installed); asking for uvloop where it is missing is an error, not a silent fallback."""

from __future__ import annotations

import asyncio
import importlib.util
import subprocess
import sys

import aiohttp
import orjson
import pytest

from kubesim.cli import loop_factory

HAS_UVLOOP = importlib.util.find_spec("uvloop") is not None
CMS = "/api/v1/namespaces/default/configmaps"


def test_loop_factory_choices() -> None:
    assert loop_factory("asyncio") is None
    if HAS_UVLOOP:
        import uvloop

        assert loop_factory("auto") is uvloop.new_event_loop
        assert loop_factory("uvloop") is uvloop.new_event_loop
    else:
        assert loop_factory("auto") is None
        with pytest.raises(SystemExit, match="uvloop is not installed"):
            loop_factory("uvloop")


async def _create_and_watch(url: str) -> None:
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{url}{CMS}") as listed:
            rv = (await listed.json())["metadata"]["resourceVersion"]
        watch = await session.get(f"{url}{CMS}?watch=1&resourceVersion={rv}&timeoutSeconds=30")
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "loop"}, "data": {"a": "b"}}
        async with session.post(f"{url}{CMS}", json=body) as created:
            assert created.status == 201
        line = await asyncio.wait_for(watch.content.readline(), 10)
        event = orjson.loads(line)
        assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "loop")
        watch.close()


@pytest.mark.parametrize("choice", ["asyncio", "auto"])
def test_standalone_server_serves_on_each_loop(choice: str) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "kubesim.cli", "--port", "0", "--no-kubelet", "--event-loop", choice],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("kubesim ready at "), f"kubesim did not start: {line!r}"
        asyncio.run(_create_and_watch(line.removeprefix("kubesim ready at ").strip()))
    finally:
        proc.terminate()
        assert proc.wait(15) == 0  # SIGTERM: a clean stop on either loop
