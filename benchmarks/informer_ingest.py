"""Informer ingest rate vs bare orjson.loads on the same bytes, in the same run.

    .venv/bin/python benchmarks/informer_ingest.py [N] [--watch-only] [--repeats R] [--e2e N_E2E]
                                                   [--interleave G] [--inline] [--controllers]

Initial list: N pods in pages of 500 fed through the real reflector (`_list` -> paging -> one orjson.loads
per page -> informer.replace: transform, key, store, namespace index, handler buffer) with only the HTTP
transport replaced by memory. Watch stream: N MODIFIED events cut into 64 KB chunks fed through the real
WatchStream framing + decode, the reflector's RV bookkeeping and informer.apply_events into the warm cache,
one handler registered (the time includes the handler draining its buffer and freeing replaced objects).

Baselines (issue 4: "the rate of bare orjson.loads on the same bytes"), with the interpreter's default GC:
- initial list: `orjson.loads` of the same pages with the items RETAINED. A list grows the heap by N pods
  whoever decodes it; retaining is what a cache must do. (Discarded is shown too; for pages of 500 pods it
  is no faster, because the collector walks every page while it is alive.)
- watch stream: `orjson.loads` of the same event lines with the results DISCARDED. In steady state a watch
  keeps the heap size constant (each event replaces an object), which is what discarding does; retaining
  100k new objects would grow the heap and make the baseline GC-bound (several times slower), i.e. an
  easy target that says nothing about the steady state. Discarded is the strict choice: the decoded object
  is freed while still in the CPU cache, whereas any cache must free the object it replaces, long cold.
  The "floor" line measures the least work of a cache that decodes every byte (decode, pop managedFields,
  replace in a dict). The informer does less than that: with the default transform it cuts managedFields
  out of the bytes before decoding (manager/client/managedfields.py), so it can beat the floor.
- watch stream of NEW pods (N ADDED events into an empty cache, a watch that starts before the pods
  exist): `orjson.loads` with the results RETAINED and the collector OFF, i.e. decoding alone, without
  the GC cost that makes a retaining baseline an easy target.
With --watch-only the list baselines are skipped (they take minutes at N=100k); --e2e N_E2E adds an
end-to-end sync of N_E2E pods from kubesim over HTTP (list, and streaming list). --watch-only --interleave G
replaces the watch sections with one that runs bare, informer and cut floor back to back on each group of G
events (R rounds) and reports medians: on a shared host whose speed drifts by 1.5x this is the steadier
comparison. --inline registers the watch handler inline (what the controllers' own enqueue handlers use):
the informer then applies each event as it is decoded and calls the handler directly. --controllers (implies
--inline) also registers the Job and ReplicaSet controllers' own pod handlers (controller_handlers.py), so
the figure is that of the manager's pods informer, every event taking those handlers' full path.
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import sys
import time
from typing import Any

import orjson
from controller_handlers import attach_controllers
from informer_fixtures import FakeResponse, PagedListClient, chunks, list_pages, watch_lines

from manager.apimachinery.resources import PODS
from manager.client.managedfields import decode_watch_line_stripped
from manager.client.watch import WatchStream
from manager.informers import EventHandlerFuncs, HandlerRegistration, InformerFactory, SharedInformer

EMPTY_PODLIST = orjson.dumps(
    {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "2999999"}, "items": []}
)


def best(fn: Any, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        gc.collect()
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def bare_list(pages: list[bytes], retain: bool) -> float:
    kept: list[Any] = []

    def run() -> None:
        kept.clear()
        for page in pages:
            items = orjson.loads(page)["items"]
            if retain:
                kept.extend(items)

    seconds = best(run)
    kept.clear()
    return seconds


async def informer_list(
    pages: list[bytes], n: int, controllers: bool = False
) -> tuple[float, SharedInformer]:
    """The initial list through the reflector. With `controllers`, the pods informer comes from a factory
    on which the Job and ReplicaSet controllers registered their pod handlers first, as in the manager."""
    client = PagedListClient(pages)
    registrations: list[HandlerRegistration] = []
    if controllers:  # the handlers keep the controllers, hence the factory and its informers, alive
        factory = InformerFactory(client)
        informer = factory.informer(PODS)
        registrations = attach_controllers(factory)
    else:
        informer = SharedInformer(client, PODS)
    started = time.perf_counter()
    await informer.reflector._list()
    seconds = time.perf_counter() - started
    assert len(informer.indexer) == n, len(informer.indexer)
    while not all(r.has_synced() for r in registrations):  # noqa: ASYNC110 (registrations have no event)
        await asyncio.sleep(0.01)
    return seconds, informer


async def informer_watch(informer: SharedInformer, data: list[bytes], n: int) -> float:
    async def opener() -> Any:
        return FakeResponse(data)

    stream = WatchStream(opener)
    informer.reflector.received = 0
    started = time.perf_counter()
    await informer.reflector._consume(stream)
    seconds = time.perf_counter() - started
    assert informer.reflector.received == n
    return seconds


def full_floor(lines: list[bytes], cache: dict[str, Any]) -> None:
    """Decode every byte, pop managedFields, replace in a dict."""
    for line in lines:
        obj = orjson.loads(line)["object"]
        meta = obj["metadata"]
        meta.pop("managedFields", None)
        cache[f"{meta['namespace']}/{meta['name']}"] = obj


def cut_decode_floor(lines: list[bytes], cache: dict[str, Any]) -> None:
    """Decode as the informer does (managedFields cut out of the bytes), replace in a dict: the replaced
    object is freed at once, while the CPU cache still holds what it touched."""
    for line in lines:
        obj = decode_watch_line_stripped(line)[1]
        meta = obj["metadata"]
        cache[f"{meta['namespace']}/{meta['name']}"] = obj


async def watch_rates(
    informer: SharedInformer, n: int, repeats: int = 3, inline: bool = False
) -> list[tuple[float, float, float, float]]:
    """(bare, informer, floor, cut floor) seconds, alternated so that all see the same machine load. The
    floor is the least a cache that decodes every byte must do: decode, pop managedFields, replace in a dict
    (no framing, no handler). The cut floor decodes as the informer does (managedFields cut out of the bytes)
    and frees each replaced object at once, while it is still in the CPU cache: what is left between it and
    the informer is framing, store, dispatch, and the handler batch keeping a read's replaced objects alive
    until the handler has seen them (on_update gets old and new)."""
    lines = watch_lines(n)
    data = list(chunks(lines))
    drained = asyncio.Event()
    received = [0]

    def on_update(old: dict[str, Any], new: dict[str, Any]) -> None:
        received[0] += 1
        if received[0] % n == 0:
            drained.set()

    informer.add_event_handler(EventHandlerFuncs(update=on_update), inline=inline).start()
    floor_cache: dict[str, Any] = {}

    def floor() -> None:
        full_floor(lines, floor_cache)

    def cut_floor() -> None:
        cut_decode_floor(lines, floor_cache)

    floor()
    gc.freeze()
    pairs = []
    for _ in range(repeats):
        started = time.perf_counter()
        for line in lines:
            orjson.loads(line)
        bare = time.perf_counter() - started
        drained.clear()
        started = time.perf_counter()
        await informer_watch(informer, data, n)
        await drained.wait()  # counted: the handler's task runs between reads and frees replaced objects
        ours = time.perf_counter() - started
        started = time.perf_counter()
        floor()
        full = time.perf_counter() - started
        gc.freeze()  # or the floor's new objects wait in generation 0 and the next run pays for walking them
        started = time.perf_counter()
        cut_floor()
        pairs.append((bare, ours, full, time.perf_counter() - started))
        gc.freeze()
    return pairs


async def interleaved_rates(
    informer: SharedInformer, n: int, group: int, rounds: int, inline: bool = False
) -> list[tuple[float, float, float]]:
    """(bare, informer, cut floor) seconds per group of `group` events: the three run back to back on each
    group, so the machine's drifts (large on shared hosts) affect all three alike."""
    lines = watch_lines(n)
    groups = [lines[i : i + group] for i in range(0, n, group)]
    data = [list(chunks(g)) for g in groups]
    drained = asyncio.Event()
    received = [0]
    expected = [0]

    def on_update(old: dict[str, Any], new: dict[str, Any]) -> None:
        received[0] += 1
        if received[0] >= expected[0]:
            drained.set()

    informer.add_event_handler(EventHandlerFuncs(update=on_update), inline=inline).start()
    floor_cache: dict[str, Any] = {}
    cut_decode_floor(lines, floor_cache)
    gc.freeze()
    results = []
    for _ in range(rounds):
        for lines_of_group, data_of_group in zip(groups, data, strict=True):
            started = time.perf_counter()
            for line in lines_of_group:
                orjson.loads(line)
            bare = time.perf_counter() - started
            drained.clear()
            expected[0] = received[0] + len(lines_of_group)
            started = time.perf_counter()
            await informer_watch(informer, data_of_group, len(lines_of_group))
            await drained.wait()
            ours = time.perf_counter() - started
            gc.freeze()
            started = time.perf_counter()
            cut_decode_floor(lines_of_group, floor_cache)
            results.append((bare, ours, time.perf_counter() - started))
            gc.freeze()
    return results


async def report_interleaved(informer: SharedInformer, n: int, group: int, rounds: int, inline: bool) -> None:
    results = await interleaved_rates(informer, n, group, rounds, inline)
    print(f"\n[watch stream into the warm cache, interleaved per {group:,} events, {rounds} rounds; medians]")
    per_event = [(b / group * 1e6, o / group * 1e6, c / group * 1e6) for b, o, c in results]
    bare, ours, cut = (statistics.median(column) for column in zip(*per_event, strict=True))
    print(f"bare orjson.loads {bare:6.2f} us/event | informer {ours:6.2f} | cut floor {cut:6.2f}")
    print(
        f"informer / bare: {100 * statistics.median(b / o for b, o, _ in results):.0f}%   "
        f"cut floor / bare: {100 * statistics.median(b / c for b, _, c in results):.0f}%   "
        f"informer / cut floor: {100 * statistics.median(c / o for _, o, c in results):.0f}%"
    )
    await informer.stop()


async def added_rates(n: int, repeats: int = 3) -> list[tuple[float, float]]:
    """(bare, informer) seconds to ingest `n` NEW pods arriving as ADDED watch events into an empty cache
    (a watch that starts before the pods exist). The baseline retains the decoded pods (ingesting n pods
    grows the heap by n pods whoever decodes them) with the collector off, so it measures decoding alone."""
    lines = watch_lines(n, event_type="ADDED")
    data = list(chunks(lines))
    pairs = []
    for _ in range(repeats):
        gc.collect()
        kept: list[Any] = []
        gc.disable()  # the strictest baseline: decoding alone, no collector walking the growing heap
        started = time.perf_counter()
        for line in lines:
            kept.append(orjson.loads(line))
        bare = time.perf_counter() - started
        gc.enable()
        del kept
        gc.collect()
        informer = SharedInformer(PagedListClient([EMPTY_PODLIST]), PODS)
        await informer.reflector._list()
        started = time.perf_counter()
        await informer_watch(informer, data, n)
        ours = time.perf_counter() - started
        assert len(informer.indexer) == n, len(informer.indexer)
        await informer.stop()
        del informer
        pairs.append((bare, ours))
    return pairs


async def report_added(n: int, repeats: int) -> None:
    pairs = await added_rates(n, repeats)
    print("\n[watch stream of new pods (ADDED) into an empty cache; bare and informer runs alternated]")
    for bare, ours in pairs:
        print(
            f"bare orjson.loads, retained, GC off {n / bare:>10,.0f} pods/s | informer (frame, decode, add) "
            f"{n / ours:>10,.0f} pods/s = {100 * bare / ours:.0f}%"
        )
    ratios = sorted(bare / ours for bare, ours in pairs)
    print(f"informer / bare orjson.loads retained: median {100 * ratios[len(ratios) // 2]:.0f}%")


async def end_to_end(n: int) -> None:
    from informer_fixtures import store_pods

    from kubesim import KubeSim
    from manager.client import create_client

    async with KubeSim(port=0, nodes=0, kubelet=False) as sim:
        store_pods(sim.store, n)
        client = await create_client(kubeconfig=sim.kubeconfig, qps=0)
        try:
            for use_watch_list in (False, True):
                informer = SharedInformer(client, PODS, use_watch_list=use_watch_list)
                started = time.perf_counter()
                informer.start()
                await informer.wait_for_cache_sync(600)
                seconds = time.perf_counter() - started
                mode = "streaming list (sendInitialEvents)" if use_watch_list else "paged list"
                print(
                    f"end-to-end over HTTP from kubesim, {mode:<34} {n / seconds:>10,.0f} pods/s "
                    f"({seconds:.2f} s for {n:,})"
                )
                await informer.stop()
                del informer
        finally:
            await client.close()


async def main() -> None:
    argv = sys.argv[1:]
    options = {"--e2e": 0, "--repeats": 3, "--interleave": 0}
    for flag in options:
        if flag in argv:
            at = argv.index(flag)
            options[flag] = int(argv[at + 1])
            del argv[at : at + 2]
    watch_only = "--watch-only" in argv
    controllers = "--controllers" in argv
    # The counting handler registered inline, as the controllers' handlers are (with --controllers it must
    # be: one buffered handler on an informer puts every event through the buffered path).
    inline = "--inline" in argv or controllers
    args = [a for a in argv if not a.startswith("--")]
    n = int(args[0]) if args else 100_000
    e2e = options["--e2e"]
    print(f"python {sys.version.split()[0]}, orjson {orjson.__version__}, N={n:,}")
    pages = list_pages(n)
    print(f"list: {len(pages)} pages, {sum(map(len, pages)) / n:,.0f} B/pod on the wire")
    if watch_only:
        seconds, informer = await informer_list(pages, n, controllers)
        print(
            f"\n[initial list] informer list (reflector -> cache) {n / seconds:>10,.0f} pods/s (no baseline)"
        )
        if options["--interleave"]:
            del pages
            await report_interleaved(informer, n, options["--interleave"], options["--repeats"], inline)
            return
    else:
        discard = bare_list(pages, retain=False)
        retain = bare_list(pages, retain=True)
        ours_list, informer = await informer_list(pages, n, controllers)
        await informer.stop()
        del informer
        gc.collect()
        second, informer = await informer_list(pages, n, controllers)
        ours_list = min(ours_list, second)
        print("\n[initial list]")
        print(f"bare orjson.loads, results discarded     {n / discard:>10,.0f} pods/s")
        print(f"bare orjson.loads, results retained      {n / retain:>10,.0f} pods/s")
        print(
            f"informer list (reflector -> cache)       {n / ours_list:>10,.0f} pods/s"
            f"   = {100 * retain / ours_list:.0f}% of retained, {100 * discard / ours_list:.0f}% of discarded"
        )
    del pages
    await report_watch(informer, n, options["--repeats"], inline)
    await report_added(n, options["--repeats"])
    if e2e and not watch_only:  # with the list baselines only
        print()
        await end_to_end(e2e)


async def report_watch(informer: SharedInformer, n: int, repeats: int, inline: bool) -> None:
    pairs = await watch_rates(informer, n, repeats, inline)
    print("\n[watch stream into the warm cache, 1 handler; bare and informer runs alternated]")
    for bare, ours, _, _ in pairs:
        print(
            f"bare orjson.loads per line {n / bare:>10,.0f} events/s | informer (frame, decode, apply) "
            f"{n / ours:>10,.0f} events/s = {100 * bare / ours:.0f}%"
        )
    ratios = sorted(bare / ours for bare, ours, _, _ in pairs)
    floors = sorted(bare / floor for bare, _, floor, _ in pairs)
    median, best_ratio = ratios[len(ratios) // 2], ratios[-1]
    print(f"informer / bare orjson.loads: median {100 * median:.0f}%, best {100 * best_ratio:.0f}%")
    floor_median = floors[len(floors) // 2]
    print(
        f"(floor of a full-decode cache: loads, pop managedFields, dict replace = {100 * floor_median:.0f}%)"
    )
    ours_vs_floor = sorted(floor / ours for _, ours, floor, _ in pairs)
    print(f"informer / floor: median {100 * ours_vs_floor[len(pairs) // 2]:.0f}%")
    cut_floors = sorted(bare / cut for bare, _, _, cut in pairs)
    ours_vs_cut = sorted(cut / ours for _, ours, _, cut in pairs)
    print(
        f"(cut floor: the informer's decoder, replaced object freed at once = "
        f"{100 * cut_floors[len(pairs) // 2]:.0f}%; informer / cut floor: median "
        f"{100 * ours_vs_cut[len(pairs) // 2]:.0f}%)"
    )
    await informer.stop()
    del informer
    gc.collect()


if __name__ == "__main__":
    asyncio.run(main())
