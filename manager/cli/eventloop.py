"""The event loop the daemon runs on (`--event-loop`).

uvloop (libuv under asyncio's API) runs the loop's own bookkeeping in C: selecting, reading and writing
sockets, timers, and the handles between them. The manager wakes up for every answer and every watch read,
and when Jobs arrive paced rather than in a burst each wake-up carries little work, so that bookkeeping is a
large share of its CPU (benchmarks/README.md: ~14 % of the manager's instructions per pod in
`job_throughput.py --scenario many-streamed`). `auto` takes uvloop when it can be imported (a dependency on
the platforms it supports) and asyncio's own loop otherwise.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Callable
from typing import Literal

EventLoopChoice = Literal["auto", "asyncio", "uvloop"]
LoopFactory = Callable[[], asyncio.AbstractEventLoop]


class EventLoopUnavailable(Exception):
    """`--event-loop=uvloop` where uvloop cannot be imported."""


def loop_factory(choice: EventLoopChoice, module: str = "uvloop") -> tuple[str, LoopFactory | None]:
    """The loop's name and its factory for `asyncio.Runner` (None: asyncio's default loop)."""
    if choice == "asyncio":
        return "asyncio", None
    try:
        uvloop = importlib.import_module(module)
    except ImportError as exc:
        if choice == "uvloop":
            raise EventLoopUnavailable(f"--event-loop=uvloop: uvloop cannot be imported ({exc})") from None
        return "asyncio", None
    factory: LoopFactory = uvloop.new_event_loop
    return "uvloop", factory
