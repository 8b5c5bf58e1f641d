"""Fixtures of the ReplicaSet integration tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from kubesim import KubeSim
from tests.integration.controllers.replicaset.harness import Env, running_manager


@pytest.fixture
async def env(kubesim: KubeSim) -> AsyncIterator[Env]:
    """kubesim, the real manager running only the ReplicaSet controller, and a test client; tests that need
    other settings use `running_manager(...)` themselves."""
    async with running_manager(kubesim) as started:
        yield started


@pytest.fixture
async def kubesim() -> AsyncIterator[KubeSim]:
    """kubesim enforcing RBAC (plain HTTP): the harness runs the manager as its ServiceAccount bound to the
    generated roles, the test client as kubesim's admin."""
    async with KubeSim(port=0, nodes=3, authorization_mode="RBAC") as sim:
        yield sim
