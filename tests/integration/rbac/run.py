"""One run of the RBAC scenario: the clients, the manager, and what kubesim refused or was asked so far."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

from manager import ApiClient, NotFound
from manager.lifecycle.manager import Manager
from manager.testing import wait_for
from tests.integration.rbac.manifests import NS


class Refused(AssertionError):
    """kubesim refused the manager a request."""


async def gone(client: ApiClient, gvr: Any, name: str, namespace: str | None = NS) -> bool:
    try:
        await client.get(gvr, name, namespace)
    except NotFound:
        return True
    return False


async def equals(count: Any, n: int) -> bool:
    return int(await count()) == n


async def at_least_one(count: Any) -> bool:
    return int(await count()) > 0


@dataclass
class Run:
    url: str
    client: ApiClient
    manager: Manager
    denials: list[str]
    timeout: float
    asked: list[str]  # "<component> <verb> <resource> <name>" of each resource request of the manager

    async def until(self, check: Any, what: str) -> None:
        async def holds() -> bool:
            if self.denials:
                raise Refused(f"kubesim refused the manager: {self.denials[0]}")
            result = check()
            return bool(await result if inspect.isawaitable(result) else result)

        await wait_for(holds, self.timeout, interval=0.05, message=what)

    async def asked_for(self, request: str) -> None:
        """Until a component of the manager has made `request` (a path no state shows afterwards)."""
        await self.until(lambda: request in self.asked, f"the manager's request {request!r}")
