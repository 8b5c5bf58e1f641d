"""The `kubesim` command's task factory (kubesim.server.inline): aiohttp's per-request coroutine is awaited in
place on the connection's task, every other coroutine still gets a task (from the factory installed before,
if any), and the server answers as before: keep-alive connections, concurrent requests, watches, errors."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import orjson
import pytest

from kubesim import KubeSim
from kubesim.pytest_plugin import KubeSimFactory
from kubesim.server import inline

CMS = "/api/v1/namespaces/default/configmaps"


async def nothing() -> int:
    return 7


async def test_only_request_coroutines_come_back_untouched() -> None:
    loop = asyncio.get_running_loop()
    made: list[Any] = []

    def previous(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Task[Any]:
        made.append(coro)
        return asyncio.Task(coro, loop=loop, **kwargs)

    loop.set_task_factory(previous)
    try:
        inline.install(loop)
        task = loop.create_task(nothing())
        assert isinstance(task, asyncio.Task) and await task == 7
        assert len(made) == 1  # the factory installed before made it
        handler = object.__new__(aiohttp.web_protocol.RequestHandler)
        coro = handler._handle_request(None, None, None)  # type: ignore[arg-type]
        made_for_request: object = loop.create_task(coro)
        assert made_for_request is coro
        coro.close()
        assert len(made) == 1
    finally:
        loop.set_task_factory(None)


@pytest.fixture
async def sim(kubesim_factory: KubeSimFactory) -> KubeSim:
    inline.install(asyncio.get_running_loop())  # this test's own loop, as the kubesim command does
    return await kubesim_factory(kubelet=False)


async def test_requests_served_in_place(sim: KubeSim) -> None:
    connector = aiohttp.TCPConnector(limit=4)  # a few keep-alive connections, each serving many requests
    async with aiohttp.ClientSession(connector=connector) as session:
        async with session.get(sim.url + CMS) as response:
            rv = orjson.loads(await response.read())["metadata"]["resourceVersion"]
        watch = await session.get(f"{sim.url}{CMS}?watch=1&resourceVersion={rv}&timeoutSeconds=30")

        async def create(i: int) -> int:
            body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i}"}}
            async with session.post(sim.url + CMS, json=body) as response:
                await response.read()
                return response.status

        assert await asyncio.gather(*(create(i) for i in range(40))) == [201] * 40
        assert await create(0) == 409  # an error answer, same connection pool
        seen = []
        async with asyncio.timeout(10):
            async for line in watch.content:
                seen.append(orjson.loads(line)["object"]["metadata"]["name"])
                if len(seen) == 40:
                    break
        watch.close()
        assert sorted(seen) == sorted(f"cm-{i}" for i in range(40))
        async with session.get(sim.url + CMS) as response:
            assert len(orjson.loads(await response.read())["items"]) == 40
