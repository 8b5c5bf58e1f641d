"""The manager at its users' scale: every built-in controller (`aiokcm --controllers '*'`) in its own process
against kubesim in another, holding N pods owned by Jobs and ReplicaSets in a settled state.

    .venv/bin/python benchmarks/scale.py [--pods 100000 --jobs 10000 --replicasets 10000]
                                         [--sizes 10000,30000,100000] [--writes 200] [--rate 20]
                                         [--idle-seconds 30] [--svg benchmarks/scale.svg]

`--sizes` runs one point per pod count, the Jobs and ReplicaSets scaled in the same proportion (the figures
above are the shape of the largest). Per point:

1. The fixture (scale_fixtures.py) is written into a kubesim data directory without the API, then
   `kubesim --data-dir DIR --no-kubelet` serves it: half the pods Running under ReplicaSets whose status
   matches, half Succeeded under Complete Jobs, spread over 100 namespaces.
2. The manager starts: the time to its "caches synced" log line, to "manager started" (controllers running),
   and until it is quiet (a 1 s window under 5 % of a core: every object's initial reconcile done).
3. Idle: the manager's CPU over `--idle-seconds` (target <= 1 % of a core) and the writes it made meanwhile.
4. Memory: the manager's VmRSS against the retained size (tracemalloc, in this process) of the bare orjson
   dicts of the pods, Jobs and ReplicaSets with managedFields dropped, as the informers keep them; target
   <= 1.3x. The interpreter baseline is the manager's VmRSS against an empty kubesim with the same flags;
   the ratio is printed both raw and with that baseline subtracted (the second is the one that scales).
5. Reaction latency (scale_latency.py): `--writes` ReplicaSet scale-ups and as many Job creates, alternated
   at `--rate` writes/s, each timed to the ADDED watch event of the pod the controller creates; target
   p99 <= 50 ms. `echo` is the same path with no controller in it (a pod this process creates).

The load average (`/proc/loadavg`) is printed with every point: the machines are shared.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import tempfile
import time
from typing import Any

from kubesim_process import process_cpu, start_kubesim, stop
from scale_fixtures import Shape, write_data_dir
from scale_latency import measure, percentile
from scale_probe import ManagerProcess, rss_bytes, stripped_dicts_bytes

from manager import JOBS, PODS, REPLICASETS
from manager.client.rest import create_client

MB = 1024 * 1024


def load() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


async def baseline_rss(log_dir: str) -> int:
    """The manager's VmRSS once synced and quiet against an empty kubesim: the interpreter, the modules, the
    controllers, the server — everything that does not grow with the cluster."""
    sim, url = start_kubesim("--no-kubelet", "--log-level", "warning")
    manager = ManagerProcess(url, os.path.join(log_dir, "manager-empty.log"))
    try:
        manager.wait_for_line(b"manager started", 60)
        manager.wait_until_quiet(60)
        return rss_bytes(manager.pid)
    finally:
        manager.stop()
        stop(sim)


async def point(shape: Shape, args: argparse.Namespace, log_dir: str, base_rss: int) -> dict[str, Any]:
    row: dict[str, Any] = {"pods": shape.pods, "jobs": shape.jobs, "replicasets": shape.replicasets}
    data_dir = tempfile.mkdtemp(prefix="scale-kubesim-")
    try:
        row["fixture_s"] = await write_data_dir(data_dir, shape, managed_fields=not args.no_managed_fields)
        t0 = time.perf_counter()
        sim, url = start_kubesim(
            "--data-dir", data_dir, "--no-kubelet", "--history-size", "10000", "--log-level", "warning"
        )
        row["kubesim_load_s"] = time.perf_counter() - t0
        try:
            row.update(await _with_kubesim(shape, args, url, sim.pid, log_dir, base_rss))
        finally:
            stop(sim)
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    return row


async def _with_kubesim(
    shape: Shape, args: argparse.Namespace, url: str, sim_pid: int, log_dir: str, base_rss: int
) -> dict[str, Any]:
    row: dict[str, Any] = {}
    client = await create_client(master=url, qps=0)
    manager = ManagerProcess(url, os.path.join(log_dir, f"manager-{shape.pods}.log"))
    try:
        row["load_at_start"] = load()
        row["synced_s"] = manager.wait_for_line(b"caches synced", 600)
        row["started_s"] = manager.wait_for_line(b"manager started", 600)
        row["quiet_s"] = manager.wait_until_quiet(600)
        row["peak_rss"] = rss_bytes(manager.pid, "VmHWM")
        writes_before = await _revision(client)
        cpu0, sim0, wall0 = process_cpu(manager.pid), process_cpu(sim_pid), time.perf_counter()
        await asyncio.sleep(args.idle_seconds)
        wall = time.perf_counter() - wall0
        row["idle_cpu_share"] = (process_cpu(manager.pid) - cpu0) / wall
        row["idle_kubesim_share"] = (process_cpu(sim_pid) - sim0) / wall
        row["idle_writes"] = await _revision(client) - writes_before
        row["rss"] = rss_bytes(manager.pid)
        row["load_idle"] = load()
        row["dicts_bytes"], row["objects"] = await stripped_dicts_bytes(client, [PODS, JOBS, REPLICASETS])
        row["base_rss"] = base_rss
        replicasets = [
            (shape.namespace(i), f"rs-{i}", shape.pods_per_rs)
            for i in range(0, shape.replicasets, max(1, shape.replicasets // args.writes))
        ]
        namespaces = [shape.namespace(i) for i in range(shape.namespaces)]
        cpu0 = process_cpu(manager.pid)
        latencies = await measure(client, namespaces, replicasets, args.writes, args.rate)
        row["writes_cpu_s"] = process_cpu(manager.pid) - cpu0
        row["load_writes"] = load()
        for kind in ("replicaset", "job", "echo"):
            values = getattr(latencies, kind)
            row[f"{kind}_n"] = len(values)
            row[f"{kind}_p50_ms"] = 1000 * percentile(values, 50)
            row[f"{kind}_p99_ms"] = 1000 * percentile(values, 99)
        both = latencies.replicaset + latencies.job
        row["p50_ms"], row["p99_ms"] = 1000 * percentile(both, 50), 1000 * percentile(both, 99)
        row["lost"] = latencies.lost
        row["errors_logged"] = manager.log_lines(b'"level": "error"') + manager.log_lines(b'"level":"error"')
    finally:
        manager.stop()
        await client.close()
    return row


async def _revision(client: Any) -> int:
    """kubesim's global revision: how many writes it has taken (one per create, update or delete)."""
    listed = await client.list(REPLICASETS, limit=1)
    return int(listed["metadata"]["resourceVersion"])


def report(row: dict[str, Any]) -> None:
    dicts, rss, base = row["dicts_bytes"], row["rss"], row["base_rss"]
    print(
        f"\n== {row['pods']:,} pods, {row['jobs']:,} Jobs, {row['replicasets']:,} ReplicaSets "
        f"(load {row['load_at_start']} at start, {row['load_idle']} idle, {row['load_writes']} writes)\n"
        f"fixture written in {row['fixture_s']:.1f} s; kubesim loaded it in {row['kubesim_load_s']:.1f} s\n"
        f"manager: caches synced {row['synced_s']:.2f} s after start, controllers started "
        f"{row['started_s']:.2f} s, quiet {row['quiet_s']:.2f} s; peak RSS {row['peak_rss'] / MB:,.0f} MB\n"
        f"idle over {row.get('idle_seconds', 0):.0f} s: manager {100 * row['idle_cpu_share']:.2f} % "
        "of a core "
        f"(target <= 1 %), kubesim {100 * row['idle_kubesim_share']:.2f} %, writes to kubesim: "
        f"{row['idle_writes']}\n"
        f"RSS {rss / MB:,.0f} MB; bare stripped dicts of {row['objects']:,} objects {dicts / MB:,.0f} MB; "
        f"baseline (empty cluster) {base / MB:,.0f} MB\n"
        f"  RSS / dicts = {rss / dicts:.2f}x; (RSS - baseline) / dicts = {(rss - base) / dicts:.2f}x "
        f"(target <= 1.3x)\n"
        f"reaction (ms, p50 / p99): ReplicaSet scale {row['replicaset_p50_ms']:.1f} / "
        f"{row['replicaset_p99_ms']:.1f} (n={row['replicaset_n']}), Job create {row['job_p50_ms']:.1f} / "
        f"{row['job_p99_ms']:.1f} (n={row['job_n']}), both {row['p50_ms']:.1f} / {row['p99_ms']:.1f} "
        f"(target p99 <= 50); echo {row['echo_p50_ms']:.1f} / {row['echo_p99_ms']:.1f} (n={row['echo_n']}); "
        f"lost {row['lost']}; manager CPU during the writes {row['writes_cpu_s']:.2f} s; "
        f"error lines logged {row['errors_logged']}",
        flush=True,
    )


def save_json(path: str, rows: list[dict[str, Any]]) -> None:
    with open(path, "w") as f:
        json.dump(rows, f, indent=1)


async def main(args: argparse.Namespace) -> None:
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else [args.pods]
    log_dir = tempfile.mkdtemp(prefix="scale-bench-")
    print(f"manager logs in {log_dir}; load {load()}", flush=True)
    base = await baseline_rss(log_dir)
    print(f"baseline: manager VmRSS against an empty kubesim {base / MB:,.0f} MB", flush=True)
    rows = []
    for pods in sizes:
        ratio = pods / args.pods
        shape = Shape(
            pods=pods,
            jobs=max(1, round(args.jobs * ratio)),
            replicasets=max(1, round(args.replicasets * ratio)),
            namespaces=args.namespaces,
        )
        row = await point(shape, args, log_dir, base)
        row["idle_seconds"] = args.idle_seconds
        report(row)
        rows.append(row)
    if args.json:
        save_json(args.json, rows)
    if args.svg and len(rows) > 1:
        from scale_svg import write_svg

        write_svg(args.svg, rows)
        print(f"plot written to {args.svg}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=100_000)
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--replicasets", type=int, default=10_000)
    parser.add_argument("--namespaces", type=int, default=100)
    parser.add_argument(
        "--sizes", default="", help="pod counts, e.g. 10000,30000,100000 (others scale along)"
    )
    parser.add_argument("--writes", type=int, default=200, help="writes of each kind timed per point")
    parser.add_argument("--rate", type=float, default=20.0, help="writes per second")
    parser.add_argument("--idle-seconds", type=float, default=30.0)
    parser.add_argument(
        "--no-managed-fields",
        action="store_true",
        help="store the objects without managedFields (the manager then never decodes them)",
    )
    parser.add_argument("--svg", default="", help="write the plot of a sweep here")
    parser.add_argument("--json", default="", help="write every point's figures here")
    asyncio.run(main(parser.parse_args()))
