"""Event-loop stalls with a large informer cache: the longest gap of a 10 ms ticker while watch events flow.

    .venv/bin/python benchmarks/loop_stall.py [N] [--seconds S] [--gc-policy on|sync-only|off] [--http]
                                              [--read-size BYTES] [--inline]

N pods (default 100,000) are listed into a pod informer through the real reflector (HTTP replaced by
memory), one handler attached. Then MODIFIED events for those pods stream through the real watch framing,
decode and apply path for S seconds (default 20), as fast as the loop allows, cut into 64 KB reads (or
--read-size: e.g. 6000 gives about one event per read, the GC policy's small-read path). A
ticker task sleeps 10 ms in a loop and records how late it wakes. Run once with the GC policy on (the
default: freeze per ingest batch, see manager/informers/gcpolicy.py), once with a single gc.freeze()
after the initial sync (sync-only), and once with no freezing at all (off) to see what CPython's cyclic GC
does to a 100k-object cache. Budget: no gap over 100 ms in steady state. --http: end to end over kubesim.
--inline: the handler registered inline, as the controllers' are (events then applied one by one).
"""

from __future__ import annotations

import asyncio
import gc
import sys
import time
from typing import Any

from informer_fixtures import FakeResponse, PagedListClient, chunks, list_pages, watch_lines

from manager.apimachinery.resources import PODS
from manager.client.watch import WatchStream
from manager.informers import EventHandlerFuncs, SharedInformer
from manager.informers.gcpolicy import GC_POLICY


def option(name: str, default: str) -> str:
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


class Ticker:
    """Records how late each 10 ms sleep wakes up, and how much CPU this process burnt meanwhile: on a shared
    machine a late wake-up with little CPU used means the OS ran someone else, not that our loop was busy."""

    def __init__(self, period: float = 0.010) -> None:
        self.period = period
        self.gaps: list[float] = []
        self.busy: list[float] = []  # CPU seconds used by this process during each late part

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            started, cpu = loop.time(), time.process_time()
            await asyncio.sleep(self.period)
            self.gaps.append(loop.time() - started - self.period)
            self.busy.append(max(0.0, time.process_time() - cpu - self.period))


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


def report_unfreeze(note: str) -> None:
    """Unfreeze and time one full collection: the unreachable objects it finds are what the freezes kept."""
    gc.unfreeze()
    started = time.perf_counter()
    found = gc.collect()
    print(
        f"after gc.unfreeze(): full collection {1000 * (time.perf_counter() - started):.0f} ms, "
        f"{found:,} unreachable objects found ({note})"
    )


async def main() -> None:
    valued = {"--seconds", "--gc-policy", "--read-size"}
    args = sys.argv[1:]
    positional = [
        a for i, a in enumerate(args) if not a.startswith("--") and (i == 0 or args[i - 1] not in valued)
    ]
    n = int(positional[0]) if positional and positional[0].isdigit() else 100_000
    seconds = float(option("--seconds", "20"))
    policy = option("--gc-policy", "on")
    GC_POLICY.enabled = policy == "on"
    read_size = int(option("--read-size", "65536"))
    handler = "inline" if "--inline" in sys.argv else "buffered"
    print(
        f"N={n:,} cached pods, gc policy {policy}, {seconds:.0f} s of events, {read_size:,} B reads, "
        f"{handler} handler"
    )
    if "--http" in sys.argv:
        await over_http(n, seconds)
        return

    pages = list_pages(n)
    informer = SharedInformer(PagedListClient(pages), PODS)
    handled = [0]
    informer.add_event_handler(
        EventHandlerFuncs(update=lambda old, new: handled.__setitem__(0, handled[0] + 1)),
        inline="--inline" in sys.argv,
    )
    informer.start = lambda: None  # type: ignore[method-assign]  # driven by hand below
    for listener in informer._listeners:
        listener.start()
    started = time.perf_counter()
    await informer.reflector._list()
    print(f"initial list of {n:,} pods: {time.perf_counter() - started:.1f} s (one-off, before steady state)")
    del pages

    if policy == "sync-only":
        gc.freeze()  # the simple alternative: freeze once after the initial sync, nothing later

    # Steady state: cycle MODIFIED events over a window of pods (keeps the benchmark's own memory bounded).
    window = min(n, 20_000)
    data = list(chunks(watch_lines(window), read_size))
    log = collections_log()
    ticker = Ticker()
    ticker_task = asyncio.create_task(ticker.run())
    await asyncio.sleep(0.1)
    ticker.gaps.clear()
    ticker.busy.clear()
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
    busy = sorted(ticker.busy)
    print(f"events applied: {events:,} ({events / elapsed:,.0f}/s), handler calls {handled[0]:,}")
    print(
        f"ticker gaps over {len(gaps):,} ticks: longest {1000 * gaps[-1]:.1f} ms, "
        f"p99 {1000 * gaps[int(len(gaps) * 0.99)]:.1f} ms, median {1000 * gaps[len(gaps) // 2]:.2f} ms"
    )
    print(
        f"  same ticks, CPU this process used while late (its own stall): longest {1000 * busy[-1]:.1f} ms, "
        f"p99 {1000 * busy[int(len(busy) * 0.99)]:.1f} ms"
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
    report_unfreeze("what freezing had kept")


async def over_http(n: int, seconds: float) -> None:
    """The same measurement end to end: kubesim (in this process, so its work counts too) serves N pods,
    the informer lists and watches them over HTTP while a writer PATCHes pods as fast as it can. Ends with
    the unfreeze + full collection that shows what the freezes kept (leaked cycles)."""
    from informer_fixtures import store_pods

    from kubesim import KubeSim
    from manager.client import create_client

    async with KubeSim(port=0, nodes=0, kubelet=False) as sim:
        store_pods(sim.store, n)
        client = await create_client(kubeconfig=sim.kubeconfig, qps=0)
        informer = SharedInformer(client, PODS)
        handled = [0]
        informer.add_event_handler(
            EventHandlerFuncs(update=lambda o, n: handled.__setitem__(0, handled[0] + 1)),
            inline="--inline" in sys.argv,
        )
        started = time.perf_counter()
        informer.start()
        await informer.wait_for_cache_sync(600)
        print(f"initial list over HTTP: {time.perf_counter() - started:.1f} s")
        log = collections_log()
        ticker = Ticker()
        ticker_task = asyncio.create_task(ticker.run())
        writes = [0]

        async def writer(worker: int) -> None:
            i = worker
            while True:
                name, namespace = f"web-7c9f8d6b5-{i % n:06d}", f"team-{i % n % 50:02d}"
                await client.patch(PODS, name, {"metadata": {"labels": {"tick": str(i)}}}, namespace)
                writes[0] += 1
                i += 8

        writers = [asyncio.create_task(writer(w)) for w in range(8)]
        await asyncio.sleep(seconds)
        for task in [*writers, ticker_task]:
            task.cancel()
        gaps, busy = sorted(ticker.gaps), sorted(ticker.busy)
        print(f"writes {writes[0]:,} ({writes[0] / seconds:,.0f}/s), handler calls {handled[0]:,}")
        print(
            f"ticker: longest gap {1000 * gaps[-1]:.1f} ms (own CPU {1000 * busy[-1]:.1f} ms), "
            f"p99 {1000 * gaps[int(len(gaps) * 0.99)]:.1f} ms"
        )
        longest = max((d for _, d in log), default=0.0)
        print(f"gc collections {len(log):,}, longest {1000 * longest:.1f} ms")
        await informer.stop()
        await client.close()
    gc.callbacks.clear()
    report_unfreeze("compare with --gc-policy off: the excess is what freezes kept")


if __name__ == "__main__":
    asyncio.run(main())
