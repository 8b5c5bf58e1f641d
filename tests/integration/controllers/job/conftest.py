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
