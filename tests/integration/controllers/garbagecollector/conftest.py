"""Fixtures of the garbage collector's integration tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from kubesim import KubeSim


@pytest.fixture
async def kubesim() -> AsyncIterator[KubeSim]:
    """kubesim enforcing RBAC over HTTPS (kubectl sends the kubeconfig's admin token only over TLS): the
    harness runs the manager as its ServiceAccount bound to the generated roles, the test client and kubectl
    as kubesim's admin."""
    async with KubeSim(port=0, nodes=3, authorization_mode="RBAC", tls=True) as sim:
        yield sim
