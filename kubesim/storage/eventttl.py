"""Event expiry: like the apiserver's --event-ttl (1h), an Event disappears that long after its last write,
so a long-running sandbox does not accumulate events forever."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from kubesim.status import errors
from kubesim.storage.store import Store, WatchEvent

log = logging.getLogger(__name__)
EVENTS = "events"


class EventExpiry:
    def __init__(
        self, store: Store, ttl: float, clock: Callable[[], float], sweep_every: float = 60.0
    ) -> None:
        self.store = store
        self.ttl = ttl
        self.clock = clock
        self.sweep_every = min(sweep_every, max(ttl / 4, 0.05))
        # Events already stored (restored from a data directory) count as written now.
        now = clock()
        self._written: dict[tuple[str, str], float] = {
            (entry.namespace, entry.name): now for entry in store.entries(EVENTS)
        }
        self._task: asyncio.Task[None] | None = None
        self._subscription = store.subscribe(EVENTS, self._on_event)

    def _on_event(self, event: WatchEvent) -> None:
        key = (event.entry.namespace, event.entry.name)
        if event.type == "DELETED":
            self._written.pop(key, None)
        else:
            self._written[key] = self.clock()

    def sweep(self) -> int:
        """Delete every event last written more than ttl ago; returns how many."""
        deadline = self.clock() - self.ttl
        expired = [key for key, written in self._written.items() if written <= deadline]
        for namespace, name in expired:
            with contextlib.suppress(errors.ApiError):
                self.store.delete(EVENTS, namespace, name)
            self._written.pop((namespace, name), None)
        return len(expired)

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.sweep_every)
            try:
                self.sweep()
            except Exception:
                log.exception("event expiry failed")

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        self._subscription.close()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
