"""Each request of a connection served on the connection's own task, for the standalone `kubesim` server.

On Python before 3.12, aiohttp's RequestHandler.start wraps every request in a task of its own (from 3.12 it
starts it eagerly, which costs little) and waits for it: per request, a task created, registered in
asyncio's weak set of all tasks, scheduled, stepped, and its completion scheduled again to wake the
connection's task. The task only isolates context variables per request, and kubesim sets none. The task
factory installed here hands `start` the request coroutine itself, which it then awaits in place: the same
code runs in the same order, one loop iteration and task fewer per request. Every other task is created as
before (by the factory that was installed, if any).

The factory is loop-wide, so only the `kubesim` command installs it (the loop it owns), as it tunes the GC;
an embedded KubeSim leaves its host's loop alone."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Coroutine, Generator
from typing import Any

from aiohttp import web_protocol

_HANDLE_REQUEST = web_protocol.RequestHandler._handle_request.__code__
TaskFactory = Any  # asyncio's own alias differs between Python versions


def wanted() -> bool:
    """Python 3.11 (aiohttp starts the request task eagerly from 3.12 on)."""
    return sys.version_info < (3, 12)


def install(loop: asyncio.AbstractEventLoop) -> None:
    """Have `loop` give aiohttp's request coroutines back as they are (see the module's docstring)."""
    previous: TaskFactory = loop.get_task_factory()

    def factory(
        loop: asyncio.AbstractEventLoop,
        coro: Coroutine[Any, Any, Any] | Generator[Any, None, Any],
        **kwargs: Any,
    ) -> Any:
        if getattr(coro, "cr_code", None) is _HANDLE_REQUEST:
            return coro  # RequestHandler.start awaits it: run in place, on the connection's task
        if previous is not None:
            return previous(loop, coro, **kwargs)
        return asyncio.Task(coro, loop=loop, **kwargs)

    loop.set_task_factory(factory)
