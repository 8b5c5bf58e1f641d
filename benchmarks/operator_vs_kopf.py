"""The same operator for kopf and for aiokcm, each in its own process against kubesim in a third: wall time to
convergence and operator CPU per object (issue 15, "Performance").

    make bench                       (installs the `bench` extra: kopf)
    .venv/bin/python benchmarks/operator_vs_kopf.py [N] [--only aiokcm-unlimited,aiokcm-defaults,kopf]
        [--profile DIR]   (each operator process under cProfile: DIR/<row>.prof)
        [--callgrind]     (each operator process under valgrind's callgrind: instructions/object)

The operator: a `Greeting` custom resource (demo.example.com/v1, namespaced, status subresource,
spec.message); for each Greeting, an owned ConfigMap (controller owner reference), status `ready: true` and a
Normal event `Greeted`. benchmarks/greeting_aiokcm.py and benchmarks/greeting_kopf.py are the two versions.

Per row: a fresh kubesim (its own process, --no-kubelet) so that no row inherits another's objects, events
or watch history, and kubesim's CPU per row is its own; the CRD and the namespaces are installed, the
operator process is started, then one warm-up Greeting (namespace `warmup`) is created and awaited, so
start-up (imports, discovery, initial lists) is outside the window. The window opens before N Greetings are
created in namespace `bench` (from this process, QPS off, 50 in flight) and closes when every one has its
owned ConfigMap, `status.ready: true` and a `Greeted` event, at the watch event that completes the last one
(three watches opened before the first create; lists confirm it afterwards). Operator CPU is the run time of
its threads over the window, divided by N: nanoseconds from /proc/<pid>/task/*/schedstat, where utime + stime
(/proc/<pid>/stat) come in 10 ms units, 2 % of the limits-off row's ~0.45 s at N=1,000 and so up to ~3 % of
the defaults/limits-off ratio; utime + stime stand in when a thread ended within the window (its run time
left with it: a thread missing at the end, or a total short of utime + stime by more than their units). The
system-time column is /proc/<pid>/stat's (sampled by the kernel's tick).

The table gives each row's wake-ups per object as well: the operator's voluntary context switches over the
window (how often it slept and was woken), which under rate limits say how the work was spread out.

Rows:
- `aiokcm --kube-api-qps=0`: limits off.
- `aiokcm` defaults: 20 QPS / 30 burst, for the controller's client and, separately, its event recorder's.
- `kopf` defaults: kopf has no client-side QPS limiter, so its "limits off" and "defaults" are one row.

How each operator runs:
- aiokcm: the installed console script `aiokcm --master <url> --controllers=bench-greeting
  --leader-elect=false --port 0 --bind-address 127.0.0.1` (default log level). The controller is found
  through its entry point as any third-party plug-in: a generated `.dist-info` (METADATA + entry_points.txt
  `bench-greeting-controller = greeting_aiokcm:GreetingController`) in a temporary directory, put on
  PYTHONPATH with benchmarks/ (the same trick as tests/integration/manager/cli/test_cli_process.py): nothing
  is installed.
- kopf: `kopf run --standalone --all-namespaces benchmarks/greeting_kopf.py` with KUBECONFIG pointing at the
  kubeconfig kubesim writes (plain HTTP, no credentials), kopf's default settings. kopf logs in with the first
  of its login handlers that succeeds: `login_via_client` here (the `kubernetes` client of the test extra);
  `login_via_async_client` and its own `login_with_kubeconfig` work against kubesim as well.
- Both at their default log level (info), into a file in a temporary directory (`--keep-logs` prints it).
  The aiokcm controller runs 5 workers (`--aiokcm-workers N` changes it, for an informative run: the
  targets are judged at 5); kopf handles each object in its own worker task (its default).

--callgrind (deterministic A/B, benchmarks/callgrind.py): each operator process runs under
`valgrind --tool=callgrind --instr-atstart=no`, instrumentation is switched on when the window opens and off
(then dumped) when it closes, and the table gains "instructions/object": the window's instruction count
divided by N, which repeats within ~1 % where CPU seconds move by 15-25 %. The CPU and wall columns are still
printed but inflated under valgrind (~20x in the window; start-up ~50x), and the script's timeouts are scaled
to match: use a modest N (200-400). Instructions are not time (system calls and cache misses are not
counted), and the defaults row's rate limits bind differently on a slowed process (it still runs:
`--only aiokcm-defaults --callgrind` at N=200 takes ~20 s, its ticks still separate the work). The dumps
stay next to the logs (`--keep-logs`: <dir>/<row>.callgrind.<pid>.1, for callgrind_annotate). It needs
valgrind and callgrind_control (exit status 2 otherwise). The kopf row is wrapped the same way.

kopf is a benchmark-only dependency (`pip install -e '.[bench]'`, which `make bench` does); without it this
script says so and exits with status 2.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import importlib.util
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

from callgrind import SLOWDOWN, Callgrind, require
from kubesim_process import process_cpu, process_times, process_wakeups, start_kubesim

from manager import CONFIGMAPS, CUSTOMRESOURCEDEFINITIONS, EVENTS, NAMESPACES, ApiClient, NotFound
from manager.client.rest import create_client

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
GROUP = "demo.example.com"
ROWS = ("aiokcm-unlimited", "aiokcm-defaults", "kopf")
ENTRY_POINTS = "[aiokcm.controllers]\nbench-greeting-controller = greeting_aiokcm:GreetingController\n"
CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"greetings.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {
            "plural": "greetings",
            "singular": "greeting",
            "kind": "Greeting",
            "listKind": "GreetingList",
        },
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {"type": "object", "properties": {"message": {"type": "string"}}},
                            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                        },
                    }
                },
            }
        ],
    },
}


def greetings_gvr() -> Any:
    from greeting_aiokcm import GREETINGS

    return GREETINGS


@dataclass
class Row:
    name: str
    wall: float
    cpu: float
    sim_cpu: float
    count: int
    created: float  # seconds this process took to create the N Greetings
    system: float  # the operator's kernel time (stime), part of cpu
    wakeups: int = 0  # the operator's voluntary context switches over the window: how often it slept
    instructions: int | None = None  # the operator's, over the window (--callgrind)

    @property
    def ms_per_object(self) -> float:
        return 1000 * self.cpu / self.count


def threads_run_ns(pid: int) -> dict[int, int]:
    """Run time (ns, /proc/<pid>/task/<tid>/schedstat) of each live thread of another process."""
    run: dict[int, int] = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        with (
            contextlib.suppress(FileNotFoundError, ProcessLookupError),
            open(f"/proc/{pid}/task/{tid}/schedstat") as f,
        ):
            run[int(tid)] = int(f.read().split()[0])
    return run


def window_cpu(before: dict[int, int], after: dict[int, int]) -> float | None:
    """Seconds of CPU between two `threads_run_ns`; None when a thread ended in between."""
    if not before.keys() <= after.keys():
        return None
    return sum(ns - before.get(tid, 0) for tid, ns in after.items()) / 1e9


def plugin_dir(root: Path) -> Path:
    """A throwaway distribution whose only content is the bench-greeting-controller entry point."""
    dist_info = root / "greeting_bench-0.0.0.dist-info"
    dist_info.mkdir(parents=True, exist_ok=True)
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: greeting-bench\nVersion: 0.0.0\n")
    (dist_info / "entry_points.txt").write_text(ENTRY_POINTS)
    return root


def start_operator(
    row: str,
    url: str,
    kubeconfig: Path,
    work: Path,
    profile: Path | None = None,
    callgrind: Callgrind | None = None,
    workers: int | None = None,
) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("AIOKCM_")}
    log = open(work / f"{row}.log", "wb")  # noqa: SIM115 (the child owns it)
    if row == "kopf":
        env["KUBECONFIG"] = str(kubeconfig)
        args = [str(BIN / "kopf"), "run", "--standalone", "--all-namespaces", str(HERE / "greeting_kopf.py")]
    else:
        env["PYTHONPATH"] = os.pathsep.join([str(plugin_dir(work / "plugins")), str(HERE)])
        args = [
            str(BIN / "aiokcm"),
            "--master",
            url,
            "--controllers=bench-greeting",
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
            "--port=0",
        ]
        if row == "aiokcm-unlimited":
            args.append("--kube-api-qps=0")
        if workers is not None:
            args.append(f"--concurrent-bench-greeting-syncs={workers}")
    if profile is not None:  # the whole process under cProfile (written when it exits on SIGTERM)
        args = [sys.executable, "-m", "cProfile", "-o", str(profile / f"{row}.prof"), *args]
    if callgrind is not None:
        args = callgrind.wrap(args)
    return subprocess.Popen(args, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=work)


def greeting(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Greeting",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"message": f"hello from {name}"},
    }


async def missing(client: ApiClient, namespace: str, count: int) -> str | None:
    """What is not converged yet in `namespace` (None when all `count` Greetings are), one kind at a time."""
    greetings = (await client.list(greetings_gvr(), namespace))["items"]
    ready = sum(1 for g in greetings if (g.get("status") or {}).get("ready") is True)
    if ready < count:
        return f"status {ready}/{count}"
    uids = {g["metadata"]["uid"] for g in greetings}
    owned = sum(
        1
        for cm in (await client.list(CONFIGMAPS, namespace))["items"]
        if any(ref.get("uid") in uids for ref in cm["metadata"].get("ownerReferences") or ())
    )
    if owned < count:
        return f"configmaps {owned}/{count}"
    events = (await client.list(EVENTS, namespace))["items"]
    greeted = {e["involvedObject"].get("uid") for e in events if e.get("reason") == "Greeted"} & uids
    if len(greeted) < count:
        return f"events {len(greeted)}/{count}"
    return None


async def until_converged(
    client: ApiClient, namespace: str, count: int, timeout: float, alive: Callable[[], bool]
) -> None:
    deadline = time.monotonic() + timeout
    while (state := await missing(client, namespace, count)) is not None:
        if not alive():
            raise RuntimeError(f"the operator exited ({state})")
        if time.monotonic() > deadline:
            raise RuntimeError(f"no convergence in {timeout:.0f} s: {state}")
        await asyncio.sleep(0.2)


class Convergence:
    """Watches Greetings, ConfigMaps and Events in one namespace (from before the first create) and sets
    `done` at the watch event that completes the last Greeting: precise to the event, where polling would
    add up to its interval and load kubesim with lists."""

    def __init__(self, client: ApiClient, namespace: str, count: int) -> None:
        self.client, self.namespace, self.count = client, namespace, count
        self.greetings: set[str] = set()
        self.ready: set[str] = set()
        self.owned: set[str] = set()
        self.greeted: set[str] = set()
        self.done = asyncio.Event()
        self.tasks: list[asyncio.Task[None]] = []

    def state(self) -> str:
        return (
            f"{len(self.greetings)} created, {len(self.ready & self.greetings)} ready, "
            f"{len(self.owned & self.greetings)} configmaps, {len(self.greeted & self.greetings)} events"
        )

    def check(self) -> None:
        g = self.greetings
        if len(g) == self.count and g <= self.ready and g <= self.owned and g <= self.greeted:
            self.done.set()

    async def start(self) -> None:
        for gvr in (greetings_gvr(), CONFIGMAPS, EVENTS):
            rv = (await self.client.list(gvr, self.namespace))["metadata"]["resourceVersion"]
            self.tasks.append(asyncio.create_task(self.follow(gvr, rv)))

    async def follow(self, gvr: Any, rv: str) -> None:
        async with self.client.watch(
            gvr, self.namespace, resource_version=rv, timeout_seconds=3600
        ) as stream:
            async for kind, obj in stream:
                if kind not in ("ADDED", "MODIFIED"):
                    continue
                if gvr is CONFIGMAPS:
                    for ref in obj["metadata"].get("ownerReferences") or ():
                        self.owned.add(ref.get("uid"))
                elif gvr is EVENTS:
                    if obj.get("reason") == "Greeted":
                        self.greeted.add(obj["involvedObject"].get("uid"))
                else:
                    self.greetings.add(obj["metadata"]["uid"])
                    if (obj.get("status") or {}).get("ready") is True:
                        self.ready.add(obj["metadata"]["uid"])
                self.check()

    async def wait(self, timeout: float, alive: Callable[[], bool]) -> None:
        deadline = time.monotonic() + timeout
        while not self.done.is_set():
            if not alive():
                raise RuntimeError(f"the operator exited ({self.state()})")
            if time.monotonic() > deadline:
                raise RuntimeError(f"no convergence in {timeout:.0f} s: {self.state()}")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.done.wait(), 0.5)

    def stop(self) -> None:
        for task in self.tasks:
            task.cancel()


async def gather_limited(jobs: list[Callable[[], Awaitable[object]]], in_flight: int) -> None:
    sem = asyncio.Semaphore(in_flight)

    async def one(job: Callable[[], Awaitable[object]]) -> None:
        async with sem:
            await job()

    await asyncio.gather(*(one(job) for job in jobs))


async def run_row(
    row: str,
    count: int,
    work: Path,
    profile: Path | None,
    callgrind: bool = False,
    workers: int | None = None,
) -> Row:
    grind = Callgrind(work, row) if callgrind else None
    slow = SLOWDOWN if callgrind else 1  # valgrind's slowdown, for the timeouts
    kubeconfig = work / "kubeconfig"
    sim, url = start_kubesim("--no-kubelet", "--history-size", "200000", "--kubeconfig", str(kubeconfig))
    operator: subprocess.Popen[bytes] | None = None
    client = await create_client(master=url, qps=0)
    try:
        await client.create(CUSTOMRESOURCEDEFINITIONS, CRD)
        for namespace in ("warmup", "bench"):
            await client.create(
                NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
            )
        for _ in range(100):  # the CRD is served
            with contextlib.suppress(NotFound):
                await client.list(greetings_gvr(), "warmup")
                break
            await asyncio.sleep(0.05)
        operator = start_operator(row, url, kubeconfig, work, profile, grind, workers)
        proc = operator

        def alive() -> bool:
            return proc.poll() is None

        await client.create(greetings_gvr(), greeting("warm-up", "warmup"), "warmup")
        await until_converged(client, "warmup", 1, 120 * slow, alive)
        await asyncio.sleep(1)  # let the warm-up's trailing work (kopf's progress patches) settle

        convergence = Convergence(client, "bench", count)
        await convergence.start()
        if grind is not None:
            grind.start(proc.pid)
        wall, times, sim_cpu = time.perf_counter(), process_times(proc.pid), process_cpu(sim.pid)
        wakes, run_ns = process_wakeups(proc.pid), threads_run_ns(proc.pid)
        await gather_limited(
            [
                functools.partial(client.create, greetings_gvr(), greeting(f"g-{i:05d}", "bench"), "bench")
                for i in range(count)
            ],
            50,
        )
        created = time.perf_counter() - wall
        await convergence.wait(600 * slow, alive)
        user, system = (after - before for after, before in zip(process_times(proc.pid), times, strict=True))
        wakes = process_wakeups(proc.pid) - wakes
        cpu = window_cpu(run_ns, threads_run_ns(proc.pid))
        if cpu is not None and cpu < user + system - 0.025:  # a thread born and ended within the window
            cpu = None
        instructions = grind.stop(proc.pid) if grind is not None else None
        result = Row(
            row,
            time.perf_counter() - wall,
            user + system if cpu is None else cpu,
            process_cpu(sim.pid) - sim_cpu,
            count,
            created,
            system,
            wakes,
            instructions,
        )
        convergence.stop()
        await until_converged(client, "bench", count, 5 * slow, alive)  # the lists agree with the watches
        return result
    finally:
        await client.close()
        for p in (operator, sim):
            if p is None:
                continue
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(15 * (slow if p is operator else 1))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("count", nargs="?", type=int, default=1000)
    parser.add_argument(
        "--only", default=",".join(ROWS), help=f"comma-separated rows among {', '.join(ROWS)}"
    )
    parser.add_argument(
        "--aiokcm-workers",
        type=int,
        metavar="N",
        help="workers of the aiokcm operator (--concurrent-bench-greeting-syncs; default 5): an informative "
        "run, the targets are judged at the default",
    )
    parser.add_argument("--keep-logs", action="store_true", help="print the directory of the operators' logs")
    parser.add_argument(
        "--profile",
        type=Path,
        help="run each operator under cProfile, writing DIR/<row>.prof (its figures are then inflated)",
    )
    parser.add_argument(
        "--callgrind",
        action="store_true",
        help="run each operator under valgrind's callgrind over the window: instructions/object",
    )
    args = parser.parse_args()
    rows = [r for r in args.only.split(",") if r]
    if unknown := set(rows) - set(ROWS):
        parser.error(f"unknown rows: {', '.join(sorted(unknown))}")
    if "kopf" in rows and importlib.util.find_spec("kopf") is None:
        print(
            "kopf is not installed: it is a benchmark-only dependency. Run `make bench`, or\n"
            "    .venv/bin/pip install -e '.[bench]'\n"
            "or leave it out: --only aiokcm-unlimited,aiokcm-defaults",
            file=sys.stderr,
        )
        sys.exit(2)
    if args.callgrind:
        require()
    work = Path(tempfile.mkdtemp(prefix="operator-vs-kopf-"))
    results = [
        asyncio.run(run_row(row, args.count, work, args.profile, args.callgrind, args.aiokcm_workers))
        for row in rows
    ]
    kopf_version = version("kopf") if importlib.util.find_spec("kopf") else "-"
    print(f"{args.count} Greetings: owned ConfigMap + status ready + event (kopf {kopf_version})")
    print(
        f"{'row':18} {'wall s':>8} {'operator cpu s':>15} {'of it sys s':>12} {'ms/object':>10} "
        f"{'kubesim cpu s':>14} {'creates done s':>15} {'wake-ups/object':>16}"
        + (f" {'instructions/object':>20}" if args.callgrind else "")
    )
    for r in results:
        print(
            f"{r.name:18} {r.wall:8.2f} {r.cpu:15.2f} {r.system:12.2f} {r.ms_per_object:10.3f} "
            f"{r.sim_cpu:14.2f} {r.created:15.2f} {r.wakeups / r.count:16.2f}"
            + (f" {r.instructions / r.count:20,.0f}" if r.instructions is not None else "")
        )
    by_name = {r.name: r for r in results}
    if {"kopf", "aiokcm-unlimited"} <= by_name.keys():
        kopf, fast = by_name["kopf"], by_name["aiokcm-unlimited"]
        print(
            f"kopf / aiokcm (limits off): cpu per object {kopf.cpu / max(fast.cpu, 1e-9):.1f}x, "
            f"wall {kopf.wall / max(fast.wall, 1e-9):.1f}x (targets >= 10x, >= 5x)"
        )
    if {"aiokcm-defaults", "aiokcm-unlimited"} <= by_name.keys():
        ratio = by_name["aiokcm-defaults"].cpu / max(by_name["aiokcm-unlimited"].cpu, 1e-9)
        print(f"aiokcm defaults / limits off: cpu per object {ratio:.2f}x (target <= 1.2x)")
    if args.keep_logs:
        print(f"logs: {work}")


if __name__ == "__main__":
    main()
