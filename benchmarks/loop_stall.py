"""Event-loop stalls with a large informer cache: the longest gap of a 10 ms ticker while watch events flow.

    .venv/bin/python benchmarks/loop_stall.py [N] [--seconds S] [--gc-policy on|off]

N pods (default 100,000) are listed into a pod informer through the real reflector (HTTP replaced by
memory), one handler attached. Then MODIFIED events for those pods stream through the real watch framing,
decode and apply path for S seconds (default 20), as fast as the loop allows, cut into 64 KB reads. A
ticker task sleeps 10 ms in a loop and records how late it wakes. Run once with the GC policy on (the
default: freeze per ingest batch, see manager/informers/gcpolicy.py) and once with it off to see what
CPython's cyclic GC does to a 100k-object cache. Budget: no gap over 100 ms in steady state.
"""

from __future__ import annotations

import asyncio
import gc
import sys
import time
from typing import Any

from informer_fixtures import FakeResponse, PagedListClient, chunks, list_pages, watch_lines

from manager.client.watch import WatchStream
from manager.informers import EventHandlerFuncs, SharedInformer
from manager.informers.gcpolicy import GC_POLICY
from manager.resources import PODS


def option(name: str, default: str) -> str:
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


class Ticker:
    def __init__(self, period: float = 0.010) -> None:
        self.period = period
        self.gaps: list[float] = []

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            started = loop.time()
            await asyncio.sleep(self.period)
            self.gaps.append(loop.time() - started - self.period)


def collections_log() -> list[tuple[int, float]]:
    log: list[tuple[int, float]] = []
    started = [0.0]

    def callback(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            log.append((info["generation"], time.perf_counter() - started[0]))

    gc.callbacks.append(callback)
    return log


async def main() -> None:
    positional = [a for a in sys.argv[1:] if not a.startswith("--") and a not in ("on", "off")]
    n = int(positional[0]) if positional and positional[0].isdigit() else 100_000
    seconds = float(option("--seconds", "20"))
    GC_POLICY.enabled = option("--gc-policy", "on") == "on"
    print(f"N={n:,} cached pods, gc policy {'on' if GC_POLICY.enabled else 'off'}, {seconds:.0f} s of events")

    pages = list_pages(n)
    informer = SharedInformer(PagedListClient(pages), PODS)
    handled = [0]
    informer.add_event_handler(
        EventHandlerFuncs(update=lambda old, new: handled.__setitem__(0, handled[0] + 1))
    )
    informer.start = lambda: None  # type: ignore[method-assign]  # driven by hand below
    for listener in informer._listeners:
        listener.start()
    started = time.perf_counter()
    await informer.reflector._list()
    print(f"initial list of {n:,} pods: {time.perf_counter() - started:.1f} s (one-off, before steady state)")
    del pages

    # Steady state: cycle MODIFIED events over a window of pods (keeps the benchmark's own memory bounded).
    window = min(n, 20_000)
    data = list(chunks(watch_lines(window)))
    gc.freeze()  # the benchmark's own fixtures must not count as the cache's young objects
    log = collections_log()
    ticker = Ticker()
    ticker_task = asyncio.create_task(ticker.run())
    await asyncio.sleep(0.1)
    ticker.gaps.clear()
    events = 0
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:

        async def opener() -> Any:
            return FakeResponse(data)

        await informer.reflector._consume(WatchStream(opener))
        events += window
    elapsed = seconds + (time.perf_counter() - deadline)
    ticker_task.cancel()
    gaps = sorted(ticker.gaps)
    print(f"events applied: {events:,} ({events / elapsed:,.0f}/s), handler calls {handled[0]:,}")
    print(
        f"ticker gaps over {len(gaps):,} ticks: longest {1000 * gaps[-1]:.1f} ms, "
        f"p99 {1000 * gaps[int(len(gaps) * 0.99)]:.1f} ms, median {1000 * gaps[len(gaps) // 2]:.2f} ms"
    )
    by_gen: dict[int, list[float]] = {}
    for generation, duration in log:
        by_gen.setdefault(generation, []).append(duration)
    for generation in sorted(by_gen):
        durations = by_gen[generation]
        longest = 1000 * max(durations)
        print(
            f"gc generation {generation}: {len(durations):,} collections, longest {longest:.1f} ms, "
            f"total {sum(durations):.2f} s"
        )
    gc.callbacks.clear()
    started = time.perf_counter()
    gc.collect()
    print(
        f"a full gc.collect() now: {1000 * (time.perf_counter() - started):.1f} ms "
        f"(frozen objects: {gc.get_freeze_count():,})"
    )
    gc.unfreeze()
    started = time.perf_counter()
    found = gc.collect()
    print(
        f"after gc.unfreeze(): full collection {1000 * (time.perf_counter() - started):.0f} ms, "
        f"{found} unreachable objects found (what freezing had kept)"
    )


if __name__ == "__main__":
    asyncio.run(main())
