"""One handler of a shared informer: its own unbounded buffer and its own task, so a slow handler grows
its buffer instead of delaying the informer or any other handler (client-go's processorListener)."""

from __future__ import annotations

import asyncio
import inspect
from collections import deque
from typing import TYPE_CHECKING, Any

import structlog

from manager.informers import metrics
from manager.informers.handlers import ResourceEventHandler

if TYPE_CHECKING:
    from manager.informers.informer import SharedInformer

log = structlog.get_logger(__name__)

ADD, UPDATE, DELETE, SYNCED = 0, 1, 2, 3
_YIELD_EVERY = 256  # a handler with a deep backlog yields to the loop this often
_MIN_RESYNC = 1.0


class HandlerRegistration:
    """One handler of one informer: its buffer, its task, its own `has_synced()`."""

    def __init__(self, informer: SharedInformer, handler: ResourceEventHandler, resync_period: float) -> None:
        self.informer = informer
        self.handler = handler
        self.resync_period = max(_MIN_RESYNC, resync_period) if resync_period > 0 else 0.0
        self.buffer: deque[tuple[int, Any, Any]] = deque()
        self._wake = asyncio.Event()
        self._idle = False
        self._synced = False
        self._task: asyncio.Task[None] | None = None
        self._resync_task: asyncio.Task[None] | None = None
        self.processed = 0

    def has_synced(self) -> bool:
        """The informer synced and this handler has been handed every object of the initial list."""
        return self._synced

    def push(self, kind: int, a: Any, b: Any) -> None:
        self.buffer.append((kind, a, b))
        if self._idle:
            self._idle = False
            self._wake.set()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name=f"informer-handler-{id(self)}"
            )
            if self.resync_period:
                self._resync_task = asyncio.get_running_loop().create_task(self._resync_loop())

    async def stop(self) -> None:
        tasks = [t for t in (self._task, self._resync_task) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._task = self._resync_task = None

    async def _resync_loop(self) -> None:
        while True:
            await asyncio.sleep(self.resync_period)
            if self.informer.has_synced():
                for obj in self.informer.indexer.list():
                    self.push(UPDATE, obj, obj)

    async def _run(self) -> None:
        handler = self.handler
        on_add, on_update, on_delete = handler.on_add, handler.on_update, handler.on_delete
        buffer = self.buffer
        popleft = buffer.popleft
        informer = self.informer
        while True:
            if not buffer:
                self._wake.clear()
                self._idle = True
                await self._wake.wait()
                continue
            budget = _YIELD_EVERY
            while buffer and budget:
                budget -= 1
                kind, a, b = popleft()
                try:
                    if kind == UPDATE:
                        result = on_update(a, b)
                    elif kind == ADD:
                        result = on_add(a, b)
                    elif kind == DELETE:
                        result = on_delete(a)
                    else:
                        self._synced = True
                        continue
                    if result is not None and inspect.isawaitable(result):
                        await result
                except asyncio.CancelledError:
                    raise
                except Exception:
                    informer.handler_errors += 1
                    metrics.HANDLER_ERRORS.labels(informer.name).inc()
                    log.exception("informer handler failed", resource=informer.name, handler=repr(handler))
            self.processed += _YIELD_EVERY - budget
            if not budget:
                await asyncio.sleep(0)
