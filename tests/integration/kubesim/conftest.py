"""Shared fixtures of the kubesim API tests; each module defines its own `sim` (its KubeSim arguments)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest

from kubesim import KubeSim
from tests.kubesim_api import Api


@pytest.fixture
async def api(sim: KubeSim) -> AsyncIterator[Api]:
    """A raw HTTP client on the module's `sim`."""
    async with aiohttp.ClientSession() as session:
        yield Api(session, sim.url)
