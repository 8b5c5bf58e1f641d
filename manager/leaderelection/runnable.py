"""The leader elector as a member of the manager's LEADER_ELECTION group."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

import structlog

from manager.leaderelection.elector import LeaderElector

log = structlog.get_logger(__name__)


class LeaderElectionRunnable:
    """Adapter for the manager's LEADER_ELECTION group: `start()` returns once we lead; losing the lease
    later calls `on_lost()` (the manager then stops the controllers and exits non-zero)."""

    def __init__(self, elector: LeaderElector, on_lost: Callable[[], None]) -> None:
        self.elector = elector
        self._on_lost = on_lost
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="leader-election")
        elected = asyncio.create_task(self.elector.elected.wait())
        try:
            await asyncio.wait({self._task, elected}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            elected.cancel()
        if not self.elector.leading:
            raise RuntimeError("leader election ended before this replica became the leader")

    async def _run(self) -> None:
        try:
            await self.elector.run()
        except Exception:  # whatever ended the election, we no longer hold the lease
            log.exception("leader election failed")
        self._on_lost()

    async def stop(self) -> None:
        if self._task is None:
            return
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._task = None
