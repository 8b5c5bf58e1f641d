"""One handler of a shared informer: its own unbounded buffer and its own task, so a slow handler grows
its buffer instead of delaying the informer or any other handler (client-go's processorListener).

The buffer holds batches: flat lists `[kind, a, b, kind, a, b, ...]`. The informer builds one batch per
network read and appends the same list to every handler's buffer (no tuple per notification, one append per
handler per read); batches are never mutated once handed out.

An `inline` registration is for cheap synchronous handlers (the controllers' handlers, which read caches
and enqueue keys; `watches(..., inline=True)`): while its buffer is empty and its task is parked, the
informer calls it directly as each event is applied (`notify`), which spares the task switch and lets the
replaced object be freed before the next event is decoded (benchmarks/informer_ingest.py). Anything that
would overtake buffered notifications (a late handler's replay, a resync) goes through the buffer as usual,
so the handler still sees events in order. The price is the isolation: a slow inline handler delays the
informer and every other handler. What stays isolated is failure: `notify` calls each handler in its own
`try`, so an exception in one (logged, counted) never keeps the event from the handlers after it."""

from __future__ import annotations

import asyncio
import inspect
from collections import deque
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import structlog

from manager.informers import metrics
from manager.informers.handlers import EventHandler

if TYPE_CHECKING:
    from manager.informers.informer import SharedInformer

log = structlog.get_logger(__name__)

ADD, UPDATE, DELETE, SYNCED = 0, 1, 2, 3
_YIELD_EVERY = 256  # a handler with a deep backlog yields to the loop this often
_MIN_RESYNC = 1.0


def replay_batch(kind: int, objects: list[Any], updates: bool) -> list[Any]:
    """A batch replaying `objects`: as `on_update(obj, obj)` when `updates`, else `on_add(obj, True)`."""
    batch: list[Any] = [kind, None, None] * len(objects)
    batch[1::3] = objects
    batch[2::3] = objects if updates else [True] * len(objects)
    return batch


class HandlerRegistration:
    """One handler of one informer: its buffer, its task, its own `has_synced()`."""

    def __init__(
        self,
        informer: SharedInformer,
        handler: EventHandler,
        resync_period: float,
        inline: bool = False,
    ) -> None:
        self.informer = informer
        self.handler = handler
        self.inline = inline
        # Bound once: `notify` makes one Python call per handler and event, the handler's own.
        self.on_add = handler.on_add
        self.on_update = handler.on_update
        self.on_delete = handler.on_delete
        # `can_call_now()` kept as a plain attribute (read per handler and event by `notify`).
        self.direct = False
        self.resync_period = max(_MIN_RESYNC, resync_period) if resync_period > 0 else 0.0
        self.buffer: deque[list[Any]] = deque()
        # Set while the task waits for an empty buffer to fill: a bare future, not an asyncio.Event (one
        # wake-up per network read, and an Event's bookkeeping shows in the ingest profile).
        self._waiter: asyncio.Future[None] | None = None
        self._synced = False
        self._task: asyncio.Task[None] | None = None
        self._resync_task: asyncio.Task[None] | None = None

    def has_synced(self) -> bool:
        """The informer synced and this handler has been handed every object of the initial list."""
        return self._synced

    def can_call_now(self) -> bool:
        """An inline handler whose task is parked on an empty buffer: a direct call keeps the order."""
        return self.direct

    def reject(self, result: object) -> None:
        """What an inline handler returned (not None): an awaitable is an error (closed, never awaited)."""
        if inspect.isawaitable(result):
            if inspect.iscoroutine(result):
                result.close()
            raise TypeError("an inline handler must not return an awaitable")

    def _count_error(self) -> None:
        informer = self.informer
        informer.handler_errors += 1
        metrics.HANDLER_ERRORS.labels(informer.name).inc()
        log.exception("informer handler failed", resource=informer.name, handler=repr(self.handler))

    def push(self, kind: int, a: Any, b: Any) -> None:
        self.push_batch([kind, a, b])

    def push_batch(self, batch: list[Any]) -> None:
        """Hand over a flat batch of notifications (shared with other handlers: read only)."""
        self.buffer.append(batch)
        self.direct = False
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

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
        self._waiter = None  # no task left to keep the order: no more direct calls
        self.direct = False

    async def _resync_loop(self) -> None:
        while True:
            await asyncio.sleep(self.resync_period)
            if self.informer.has_synced():
                self.push_batch(replay_batch(UPDATE, self.informer.indexer.list(), True))

    async def _run(self) -> None:
        handler = self.handler
        on_add, on_update, on_delete = handler.on_add, handler.on_update, handler.on_delete
        buffer = self.buffer
        popleft = buffer.popleft
        create_future = asyncio.get_running_loop().create_future
        budget = _YIELD_EVERY
        while True:
            if not buffer:
                self._waiter = waiter = create_future()
                self.direct = self.inline
                try:
                    await waiter
                finally:
                    self.direct = False
                continue
            batch = popleft()
            triples = iter(batch)  # [kind, a, b, kind, a, b, ...]: always whole triples
            for kind, a, b in zip(triples, triples, triples, strict=False):
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
                    self._count_error()
                budget -= 1
                if not budget:  # a deep backlog: let the loop (and the informer) run in between
                    budget = _YIELD_EVERY
                    await asyncio.sleep(0)
            # The replaced objects the batch holds are freed now, not when the next batch arrives.
            a = b = None
            del batch, triples


def notify(listeners: Iterable[HandlerRegistration], kind: int, a: Any, b: Any) -> None:
    """One notification to each handler, in order: a direct call of each that `can_call_now()` (one Python
    call per handler: its own method), the buffer for the others. Each call runs in its own `try`: an
    exception, or an awaitable returned by an inline handler, is logged and counted for that handler and
    the handlers after it still get the event."""
    for listener in listeners:
        if listener.direct:
            try:
                if kind == UPDATE:
                    result = listener.on_update(a, b)
                elif kind == ADD:
                    result = listener.on_add(a, b)
                else:
                    result = listener.on_delete(a)
                if result is not None:
                    listener.reject(result)
            except Exception:
                listener._count_error()
        else:
            listener.push_batch([kind, a, b])
