"""Fixtures of the Job integration tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from kubesim import KubeSim
from tests.integration.controllers.job.harness import Env, running


@pytest.fixture
async def env(kubesim: KubeSim) -> AsyncIterator[Env]:
    """kubesim, the real manager running the Job controller with short timings, and a test client; tests
    that need other settings or another controller class use `running(...)` themselves."""
    async with running(kubesim) as started:
        yield started


@pytest.fixture
async def kubesim() -> AsyncIterator[KubeSim]:
    """kubesim enforcing RBAC (plain HTTP): the harness runs the manager as its ServiceAccount bound to the
    generated roles, the test client as kubesim's admin."""
    async with KubeSim(port=0, nodes=3, authorization_mode="RBAC") as sim:
        yield sim
