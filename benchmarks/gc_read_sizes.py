"""Instructions per watch event by network read size: what the informers' per-read GC policy costs.

    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=/tmp/grs.%p \\
        .venv/bin/python benchmarks/gc_read_sizes.py [--cached N] [--events E] [--read-size BYTES]

N pods (default 2,000) are listed into a pods informer through the real reflector (HTTP replaced by
memory) with the Job and ReplicaSet controllers' pod handlers attached inline, as in the manager. Then E
MODIFIED events (default 4,000) stream through the real watch framing, decode and apply path, cut into
reads of BYTES (default 6,000: about one event per read, the paced path of manager/informers/gcpolicy.py;
65,536 is a bulk stream). Under callgrind (`--instr-atstart=no`) the script opens the instrumentation
window around the stream itself with `callgrind_control` and prints the window's instructions per event;
without valgrind it prints only the shape of the run. The loop does no other work between reads, so the
per-read generation-0 collection walks almost nothing: this measures the policy's cost on the ingest
path (deferred objects walked, collections), not what it saves in a busy manager.

--garbage K (the leak side, run without valgrind): a task makes K reference cycles (an exception kept by
the frame its traceback holds) between reads, as a loop whose handlers catch errors would. At the end
the script prints the frozen objects, the RSS, and what one unfreeze + full collection finds: the cycles
that freezes kept from the collector.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import subprocess
from pathlib import Path
from typing import Any

from callgrind import totals
from controller_handlers import attach_controllers
from informer_fixtures import FakeResponse, PagedListClient, chunks, list_pages, watch_lines

from manager.apimachinery.resources import PODS
from manager.client.watch import WatchStream
from manager.informers import InformerFactory


def callgrind(*args: str) -> bool:
    """`callgrind_control ARGS <this pid>`; False when this process is not under callgrind."""
    done = subprocess.run(
        ["callgrind_control", *args, str(os.getpid())], capture_output=True, text=True, timeout=120
    )
    return done.returncode == 0 and "Error" not in done.stdout


def make_cycle() -> None:
    try:
        raise ValueError("cyclic garbage")
    except ValueError as exc:
        kept = exc  # exc -> traceback -> this frame -> kept -> exc
    assert kept


async def make_garbage(per_turn: int) -> None:
    while True:
        for _ in range(per_turn):
            make_cycle()
        await asyncio.sleep(0)


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


async def main(cached: int, events: int, read_size: int, garbage: int) -> None:
    factory = InformerFactory(PagedListClient(list_pages(cached)))
    informer = factory.informer(PODS)
    registrations = attach_controllers(factory)  # they keep the controllers (and the factory) alive
    await informer.reflector._list()
    while not all(r.has_synced() for r in registrations):  # noqa: ASYNC110 (registrations have no event)
        await asyncio.sleep(0.01)
    window = min(cached, events)
    data = list(chunks(watch_lines(window), read_size))
    garbage_task = asyncio.create_task(make_garbage(garbage)) if garbage else None
    grinding = callgrind("-i", "on")
    applied = 0
    while applied < events:

        async def opener() -> Any:
            return FakeResponse(data)

        await informer.reflector._consume(WatchStream(opener))
        applied += window
    per_event = sum(len(chunk) for chunk in data) // window
    shape = f"{cached:,} cached, {applied:,} events in reads of {read_size:,} B ({per_event:,} B/event)"
    if garbage_task is not None:
        garbage_task.cancel()
        frozen, rss = gc.get_freeze_count(), rss_mb()
        gc.unfreeze()
        print(
            f"{shape}, {garbage} cycles per loop turn: frozen objects {frozen:,}, RSS {rss:.0f} MB, "
            f"unreachable after unfreeze {gc.collect():,}"
        )
    if not grinding:
        print(f"{shape}: not under callgrind, no instruction count")
        return
    print(f"{shape}: {window_instructions() / applied:,.0f} instructions/event")


def window_instructions() -> int:
    """Close the window and read its count from the newest dump (`--callgrind-out-file=/tmp/grs.%p`)."""
    callgrind("-i", "off")
    callgrind("-d")
    dumps = sorted(Path("/tmp").glob(f"grs.{os.getpid()}.*"), key=lambda p: p.stat().st_mtime)
    return totals(dumps[-1])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cached", type=int, default=2_000)
    parser.add_argument("--events", type=int, default=4_000)
    parser.add_argument("--read-size", type=int, default=6_000)
    parser.add_argument("--garbage", type=int, default=0, help="reference cycles made per loop turn")
    args = parser.parse_args()
    asyncio.run(main(args.cached, args.events, args.read_size, args.garbage))
