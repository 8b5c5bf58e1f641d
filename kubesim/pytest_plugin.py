"""pytest plugin (entry point `pytest11: kubesim`): a running kubesim per test.

    async def test_something(kubesim):            # KubeSim(port=0, nodes=3), torn down after the test
        async with aiohttp.ClientSession() as s:
            await s.get(f"{kubesim.url}/api/v1/namespaces/default/pods")

    async def test_custom(kubesim_factory):       # any KubeSim arguments, e.g. no kubelet
        sim = await kubesim_factory(kubelet=False, seed=7)

    async def test_timing(kubesim_factory):       # time moves only when the test says so
        clock = ManualClock()                     # from kubesim.kubelet.clock
        sim = await kubesim_factory(clock=clock)
        ...; clock.advance(0.5)                   # pods with run-seconds <= 0.5 finish now

Both fixtures are async and need an asyncio pytest plugin (pytest-asyncio) in the using project.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

import pytest

from kubesim.sim import KubeSim

try:  # pytest11 plugins load in every pytest run of the environment: never break one without pytest-asyncio
    from pytest_asyncio import fixture as async_fixture
except ImportError:  # pragma: no cover - depends on the installing project
    async_fixture = pytest.fixture  # type: ignore[assignment]

KubeSimFactory = Callable[..., Awaitable[KubeSim]]


@async_fixture
async def kubesim() -> AsyncIterator[KubeSim]:
    """A kubesim on a free port with three Ready nodes and the simulated kubelet."""
    async with KubeSim(port=0, nodes=3) as sim:
        yield sim


@async_fixture
async def kubesim_factory() -> AsyncIterator[KubeSimFactory]:
    """Start kubesims with custom arguments (defaults: port=0, nodes=3); all are stopped after the test."""
    async with AsyncExitStack() as stack:

        async def start(**kwargs: Any) -> KubeSim:
            kwargs.setdefault("port", 0)
            kwargs.setdefault("nodes", 3)
            return await stack.enter_async_context(KubeSim(**kwargs))

        yield start
