"""Job controller throughput with the real manager (job-controller only, in this process) against kubesim
in a separate process, client-side rate limits off. Scenarios:

  one-big        one Job, completions 2000, parallelism 100, pods exit at once (run-seconds 0)
  many           500 one-pod Jobs created at once (50 creates in flight), pods exit at once
  many-streamed  500 one-pod Jobs streamed by 5 clients over --stream-seconds (5 s), pods exit at once
  many-slow      500 one-pod Jobs created at once, each pod running 1-3 s (spread evenly)

    .venv/bin/python benchmarks/job_throughput.py [--completions 2000] [--parallelism 100] [--jobs 500]
                                                  [--concurrent-job-syncs 5] [--stream-seconds 5]
                                                  [--scenario both|all|one-big|many|many-streamed|many-slow]
                                                  [--callgrind]
  (both: one-big and many; all: every scenario)

Three processes: kubesim, the manager (`aiokcm --controllers job --kube-api-qps 0`, JSON logs at info)
and this driver (creates the Jobs, polls for completion). For each scenario: wall time from the first create
to the last Complete condition, CPU seconds of the manager and of kubesim (from /proc), and the manager's
CPU per completed pod. A process near 100 % of a core is the limit (one asyncio loop uses one core); when
neither is, the limit is the controller's own pacing (pod events are batched per Job for 1 s, as upstream).
On a shared machine compare the manager/kubesim CPU ratio between runs rather than absolute figures.
Before and after the scenarios, a "platform" line gives the machine's price of a wake-up in the same minutes
(benchmarks/wakeup_cost.py's slice, back to back and after 10 ms asleep): the paced scenarios pay it several
times per pod, so their figures follow it.

--callgrind (deterministic A/B, benchmarks/callgrind.py): the manager runs under
`valgrind --tool=callgrind --instr-atstart=no`, instrumentation on only from a scenario's first create to its
last completion, and each scenario's line gains the manager's instructions per pod, which repeat far better
than CPU seconds. Its CPU and wall figures are inflated under valgrind (~20x; start-up ~50x, its timeout is
scaled), so use small scenarios (e.g. --scenario many --jobs 200). Instructions are not time: system calls
and cache misses are not counted, and scenarios paced by real time (many-slow, many-streamed, the 1 s event
batching) do work that depends on the slowdown. One dump per scenario stays in the temporary directory
(job_throughput_manager_<pid>.callgrind.<manager pid>.<n>, for callgrind_annotate). Needs valgrind and
callgrind_control (exit status 2 otherwise).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from callgrind import SLOWDOWN, Callgrind, require
from kubesim_process import process_times, process_wakeups, start_kubesim
from wakeup_cost import cold_factor

from manager import JOBS, PODS, ApiClient
from manager.client.rest import create_client

NS = "default"


def job(name: str, completions: int, parallelism: int, run_seconds: float = 0) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NS, "labels": {"bench": "jobs"}},
        "spec": {
            "completions": completions,
            "parallelism": parallelism,
            "template": {
                "metadata": {"annotations": {"kubesim.aiokcm.io/run-seconds": f"{run_seconds:g}"}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]},
            },
        },
    }


def complete(obj: dict[str, Any]) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Complete" and c.get("status") == "True" for c in conditions)


def start_manager(
    url: str, log_path: str, workers: int = 5, callgrind: Callgrind | None = None
) -> subprocess.Popen[bytes]:
    aiokcm = os.path.join(os.path.dirname(sys.executable), "aiokcm")
    # JOB_BENCH_MANAGER_CMD replaces the manager executable, e.g. with a profiling wrapper.
    prefix = os.environ.get("JOB_BENCH_MANAGER_CMD", aiokcm).split()
    args = [
        *prefix, "--master", url, "--controllers", "job", "--leader-elect=false", "--kube-api-qps", "0",
        "--bind-address", "127.0.0.1", "--port", "0", "--log-format", "json", "--log-level", "info",
        "--concurrent-job-syncs", str(workers),
    ]  # fmt: skip
    if callgrind is not None:
        args = callgrind.wrap(args)
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30 * (SLOWDOWN if callgrind is not None else 1)
    while time.monotonic() < deadline:
        with open(log_path, "rb") as f:
            if b"manager started" in f.read():
                return proc
        time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"the manager did not start; see {log_path}")


async def create_at_once(client: ApiClient, jobs: list[dict[str, Any]]) -> None:
    gate = asyncio.Semaphore(50)

    async def create(body: dict[str, Any]) -> None:
        async with gate:
            await client.create(JOBS, body, NS)

    await asyncio.gather(*(create(j) for j in jobs))


async def create_streamed(
    client: ApiClient, jobs: list[dict[str, Any]], clients: int = 5, seconds: float = 5.0
) -> None:
    """`clients` concurrent streams, each creating its share one at a time at an even pace over `seconds`."""
    shares = [jobs[i::clients] for i in range(clients)]

    async def stream(share: list[dict[str, Any]], offset: float) -> None:
        start = time.monotonic() + offset
        for i, body in enumerate(share):
            await asyncio.sleep(max(0.0, start + i * seconds / len(share) - time.monotonic()))
            await client.create(JOBS, body, NS)

    await asyncio.gather(*(stream(share, k * seconds / len(jobs)) for k, share in enumerate(shares)))


async def run_scenario(
    client: ApiClient,
    sim_pid: int,
    manager_pid: int,
    label: str,
    jobs: list[dict[str, Any]],
    pods: int,
    stream_seconds: float | None = None,
    callgrind: Callgrind | None = None,
) -> dict[str, float]:
    if callgrind is not None:
        callgrind.start(manager_pid)
    (user0, sys0), sim0 = process_times(manager_pid), sum(process_times(sim_pid))
    wakes0, wall0 = process_wakeups(manager_pid), time.monotonic()
    if stream_seconds is None:
        await create_at_once(client, jobs)
    else:
        await create_streamed(client, jobs, seconds=stream_seconds)
    names = {j["metadata"]["name"] for j in jobs}
    while True:
        if len(jobs) == 1:
            done = (
                {jobs[0]["metadata"]["name"]}
                if complete(await client.get(JOBS, jobs[0]["metadata"]["name"], NS))
                else set()
            )
        else:
            listed = await client.list(JOBS, NS, label_selector="bench=jobs")
            done = {j["metadata"]["name"] for j in listed["items"] if complete(j)}
        if names <= done:
            break
        await asyncio.sleep(0.25)
    wall = time.monotonic() - wall0
    (user, system), wakes = process_times(manager_pid), process_wakeups(manager_pid) - wakes0
    user, system = user - user0, system - sys0
    cpu, sim = user + system, sum(process_times(sim_pid)) - sim0
    instructions = callgrind.stop(manager_pid) if callgrind is not None else None
    busiest = max(("manager", cpu), ("kubesim", sim), key=lambda item: item[1])
    limit = (
        busiest[0]
        if busiest[1] / wall > 0.7
        else "no process saturated: pacing (1 s event batching, API round trips per sync)"
    )
    # Sanity: every pod created exactly once and every completion counted exactly once.
    all_pods = (await client.list(PODS, NS))["items"]
    mine = [p for p in all_pods if p["metadata"].get("labels", {}).get("job-name") in names]
    listed = (await client.list(JOBS, NS, label_selector="bench=jobs"))["items"]
    succeeded = sum(
        int((j.get("status") or {}).get("succeeded") or 0) for j in listed if j["metadata"]["name"] in names
    )
    if len(mine) != pods or succeeded != pods:
        print(
            f"!! {label}: {len(mine)} pods created and {succeeded} counted for {pods} completions", flush=True
        )
    print(
        f"{label:13s} pods={pods:5d} wall={wall:6.2f}s  pods/s={pods / wall:7.1f}  "
        f"manager cpu={cpu:6.2f}s ({1000 * cpu / pods:5.2f} ms/pod, {100 * cpu / wall:3.0f}% of a core, "
        f"{100 * system / max(cpu, 1e-9):2.0f}% system, {wakes / pods:4.1f} wake-ups/pod)  "
        f"kubesim cpu={sim:6.2f}s ({100 * sim / wall:3.0f}%)  limit: {limit}"
        + (f"  manager instructions/pod={instructions / pods:,.0f}" if instructions is not None else ""),
        flush=True,
    )
    return {"wall": wall, "cpu": cpu, "sim": sim}


def print_cold_factor(when: str) -> None:
    """The machine's price of a wake-up in the same minutes (benchmarks/wakeup_cost.py): the paced
    scenarios pay it several times per pod, so their figures move with it from hour to hour."""
    hot, cold = cold_factor()
    print(
        f"platform ({when}): a wakeup_cost.py slice takes {hot:.0f} us of CPU back to back, {cold:.0f} us "
        f"after 10 ms asleep ({cold / hot:.1f}x)",
        flush=True,
    )


async def main(
    completions: int,
    parallelism: int,
    count: int,
    workers: int,
    scenario: str,
    stream_seconds: float,
    callgrind: bool = False,
) -> None:
    # JOB_BENCH_KUBESIM_DIR runs kubesim from another checkout (e.g. a stable copy while it is edited).
    sim_proc, url = start_kubesim(
        "--nodes", "20", "--history-size", "200000", "--log-level", "warning",
        cwd=os.environ.get("JOB_BENCH_KUBESIM_DIR"),
    )  # fmt: skip
    log_path = os.path.join(tempfile.gettempdir(), f"job_throughput_manager_{os.getpid()}.log")
    grind = (
        Callgrind(Path(tempfile.gettempdir()), f"job_throughput_manager_{os.getpid()}") if callgrind else None
    )
    manager_proc = start_manager(url, log_path, workers, grind)
    client = await create_client(master=url, qps=0)
    print_cold_factor("before")
    try:
        pids = (sim_proc.pid, manager_proc.pid)
        if scenario in ("both", "all", "one-big"):
            big = [job("big", completions, parallelism)]
            await run_scenario(client, *pids, "one-big", big, completions, callgrind=grind)
        if scenario in ("both", "all", "many"):
            jobs = [job(f"small-{i}", 1, 1) for i in range(count)]
            await run_scenario(client, *pids, "many", jobs, count, callgrind=grind)
        if scenario in ("all", "many-streamed"):
            jobs = [job(f"streamed-{i}", 1, 1) for i in range(count)]
            await run_scenario(client, *pids, "many-streamed", jobs, count, stream_seconds, grind)
        if scenario in ("all", "many-slow"):
            jobs = [job(f"slow-{i}", 1, 1, run_seconds=1 + 2 * i / count) for i in range(count)]
            await run_scenario(client, *pids, "many-slow", jobs, count, callgrind=grind)
        print_cold_factor("after")
    finally:
        await client.close()
        for proc in (manager_proc, sim_proc):
            proc.terminate()
            try:
                proc.wait(15 * (SLOWDOWN if grind is not None and proc is manager_proc else 1))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--completions", type=int, default=2000)
    parser.add_argument("--parallelism", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--concurrent-job-syncs", type=int, default=5, help="the manager's Job workers")
    parser.add_argument(
        "--scenario",
        choices=("both", "all", "one-big", "many", "many-streamed", "many-slow"),
        default="both",
    )
    parser.add_argument("--stream-seconds", type=float, default=5.0, help="many-streamed: creation spread")
    parser.add_argument(
        "--callgrind",
        action="store_true",
        help="run the manager under valgrind's callgrind over each scenario: instructions/pod",
    )
    args = parser.parse_args()
    if args.callgrind:
        require()
    asyncio.run(
        main(
            args.completions,
            args.parallelism,
            args.jobs,
            args.concurrent_job_syncs,
            args.scenario,
            args.stream_seconds,
            args.callgrind,
        )
    )
