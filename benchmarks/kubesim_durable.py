"""kubesim creates per second with --data-dir (SQLite, one commit per event-loop turn) against the in-memory
store, in the same run: the server in a subprocess pinned to one core, the load generator on another.

    .venv/bin/python benchmarks/kubesim_durable.py [--creates 6000] [--rounds 3] [--concurrency 32]
    .venv/bin/python benchmarks/kubesim_durable.py --history-memory [--updates 10000]

Each round starts a fresh in-memory server and a fresh durable one (a new temporary data directory) and times
the same creates against each; the medians of the rounds are printed with the machine's load average.
Target (issue 17): durable within 1.5x of in-memory, and >= 3,000 creates/s.

`--history-memory` measures (tracemalloc) what the watch history holds per retained event after `--updates`
status updates of 100 running pods (each one as the simulated kubelet wrote it); target: at most 4 KB.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import orjson
from kubesim_throughput import CMS, PODS, configmap, cpu_seconds, create_many, pod, start_server

SERVER = """
import asyncio, os, sys
cores = os.sched_getaffinity(0)
core = int(sys.argv[1])
if core in cores:
    os.sched_setaffinity(0, {core})
from kubesim import KubeSim

async def main():
    data_dir = sys.argv[2] or None
    async with KubeSim(port=0, kubelet=False, history_size=10000, data_dir=data_dir) as sim:
        print(sim.url, flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)

asyncio.run(main())
"""


async def measure(pid: int, url: str, creates: int, concurrency: int) -> dict[str, float]:
    """Creates per wall-clock second and per server-CPU-second, for configmaps and then pods."""
    await create_many(url, CMS, configmap, "warm", 200, concurrency)
    figures: dict[str, float] = {}
    for label, path, make in (("configmaps", CMS, configmap), ("pods", PODS, pod)):
        cpu = cpu_seconds(pid)
        elapsed = await create_many(url, path, make, label, creates, concurrency)
        figures[f"{label}/s"] = creates / elapsed
        figures[f"{label}/cpu-s"] = creates / (cpu_seconds(pid) - cpu)
    return figures


def one_server(core: int, data_dir: str, creates: int, concurrency: int) -> dict[str, float]:
    proc, url = start_server(SERVER, core, data_dir)
    try:
        return asyncio.run(measure(proc.pid, url, creates, concurrency))
    finally:
        assert proc.stdin is not None
        proc.stdin.close()  # the server stops cleanly (the durable one closes its store)
        proc.wait(timeout=30)


async def running_pod() -> dict[str, Any]:
    """A Job's pod as stored once the simulated kubelet runs it (created over HTTP: managedFields and all)."""
    import aiohttp

    from kubesim import KubeSim

    body = orjson.loads(pod("p"))
    body["metadata"]["labels"] |= {"batch.kubernetes.io/job-name": "j", "job-name": "j"}
    body["metadata"]["ownerReferences"] = [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "0f0e0d0c-0b0a-4908-8706-050403020100"}
    ]
    async with KubeSim(nodes=1) as sim, aiohttp.ClientSession() as session:
        async with session.post(
            f"{sim.url}{PODS}?fieldManager=kube-controller-manager", json=body
        ) as response:
            assert response.status == 201, await response.text()
        for _ in range(500):
            entry = sim.store.entry("pods", "default", "p")
            if entry is not None and entry.obj.get("status", {}).get("phase") == "Running":
                return dict(orjson.loads(entry.data))
            await asyncio.sleep(0.01)
    raise SystemExit("the pod did not start")


def history_memory(updates: int) -> None:
    from kubesim.storage.store import Store

    template = asyncio.run(running_pod())
    store = Store(history_size=updates)
    for i in range(100):
        obj = orjson.loads(orjson.dumps(template))
        obj["metadata"] = {**obj["metadata"], "name": f"p{i}", "resourceVersion": None}
        del obj["metadata"]["resourceVersion"], obj["metadata"]["uid"]
        store.create("pods", obj)
    tracemalloc.start()
    started = time.perf_counter()
    for n in range(updates):
        current = store.get("pods", "default", f"p{n % 100}")
        assert current is not None
        current["metadata"].setdefault("annotations", {})["seq"] = str(n)
        store.update("pods", current)
    elapsed = time.perf_counter() - started
    retained = len(store.events_since("pods", store.floor("pods")))
    gc.collect()
    with_history = tracemalloc.get_traced_memory()[0]
    store.compact()
    gc.collect()
    per_event = (with_history - tracemalloc.get_traced_memory()[0]) / retained
    tracemalloc.stop()
    size = len(orjson.dumps(template))
    print(f"{updates:,} updates of 100 running pods ({size:,} bytes of JSON each) in {elapsed:.1f}s (traced)")
    print(f"watch history: {retained:,} events retained, {per_event:,.0f} bytes per retained event")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--creates", type=int, default=6000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--history-memory", action="store_true", help="bytes per retained watch event")
    parser.add_argument("--updates", type=int, default=10000)
    args = parser.parse_args()
    if args.history_memory:
        history_memory(args.updates)
        return
    cores = sorted(os.sched_getaffinity(0))
    server_core = cores[0]
    if len(cores) > 1:
        os.sched_setaffinity(0, set(cores[1:]))
    print(f"server pinned to core {server_core}; load average before: {os.getloadavg()}")
    results: dict[str, list[dict[str, float]]] = {"memory": [], "durable": []}
    for round_number in range(1, args.rounds + 1):
        with tempfile.TemporaryDirectory(prefix="kubesim-durable-") as data_dir:
            for kind, directory in (("memory", ""), ("durable", data_dir)):
                figures = one_server(server_core, directory, args.creates, args.concurrency)
                results[kind].append(figures)
                shown = "  ".join(f"{k} {v:,.0f}" for k, v in figures.items())
                print(f"round {round_number} {kind:<8} {shown}")
            size = (Path(data_dir) / "kubesim.db").stat().st_size
            print(f"round {round_number} kubesim.db {size / 1e6:.1f} MB (WAL checkpointed at close)")
    print(f"medians of {args.rounds} rounds ({args.creates} creates each, {args.concurrency} connections):")
    for key in results["memory"][0]:
        memory = statistics.median(r[key] for r in results["memory"])
        durable = statistics.median(r[key] for r in results["durable"])
        print(f"  {key:<16} memory {memory:>8,.0f}  durable {durable:>8,.0f}  ratio {memory / durable:4.2f}x")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
