"""The CronJob controller against kubesim in a process of its own, with the real manager running only
cronjob-controller (no Job controller: the Jobs stay pod-less, so what is measured is the CronJob path),
client-side rate limits off.

    .venv/bin/python benchmarks/cronjob_due.py due [N]       (default N = 1000)
    .venv/bin/python benchmarks/cronjob_due.py idle [SECONDS] (default 20; 1,000 hourly CronJobs)

`due`: N CronJobs scheduled `0 * * * *`, all synced once (nothing due, each requeued for the next hour).
Then the due instant is made to come at once: the controller's injectable clock (`now`, as upstream's) is
set to one second past the next hour and every CronJob key is put on the queue, which is what the delaying
queue does at that instant. Prints the time from then until all N Jobs are in the controller's Jobs cache and
until every CronJob's status (active, lastScheduleTime) is written, the manager's and kubesim's CPU over that
time, and the manager's CPU per Job created.

`idle`: the manager's CPU over SECONDS with 1,000 hourly CronJobs between their schedule times: each waits
in the delaying queue for its time, so the figure should be ~0.

The manager's CPU is this process's time.process_time(), including the benchmark's own polling of in-process
caches (every 50 ms).
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any

from kubesim_process import process_cpu, running_kubesim

from controllers.cronjob import CronJobController
from manager import CRONJOBS, Request
from manager.cli.logging import configure_logging
from manager.client.rest import ApiClient, create_client
from manager.lifecycle.manager import Manager
from manager.testing import controller_of, run_manager

HOUR = 3600.0


def cronjob(i: int) -> dict[str, Any]:
    pod = {"spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}}
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": f"cj-{i}", "namespace": "default"},
        "spec": {"schedule": "0 * * * *", "jobTemplate": {"spec": {"template": pod}}},
    }


async def create_all(client: ApiClient, count: int) -> None:
    sem = asyncio.Semaphore(64)

    async def one(i: int) -> None:
        async with sem:
            await client.create(CRONJOBS, cronjob(i), "default")

    await asyncio.gather(*(one(i) for i in range(count)))


async def settle(ctl: CronJobController, count: int) -> None:
    """Every CronJob cached and synced once: all of them wait in the delaying queue for the next hour."""
    while len(ctl.cronjobs.list()) < count or len(ctl.queue) or ctl.queue.waiting < count:  # noqa: ASYNC110
        await asyncio.sleep(0.05)


async def due(manager: Manager, client: ApiClient, count: int, sim_pid: int) -> None:
    ctl = controller_of(manager, CronJobController)
    await create_all(client, count)
    await settle(ctl, count)
    next_hour = (time.time() // HOUR + 1) * HOUR
    offset = next_hour + 1 - time.time()
    ctl.now = lambda: time.time() + offset
    wall, cpu, sim_cpu = time.perf_counter(), time.process_time(), process_cpu(sim_pid)
    for obj in ctl.cronjobs.list():
        ctl.queue.add(Request.for_object(obj))
    while len(ctl.jobs.list()) < count:  # noqa: ASYNC110 - polling the cache is the measurement
        await asyncio.sleep(0.05)
    jobs_wall = time.perf_counter() - wall
    while sum(1 for cj in ctl.cronjobs.list() if (cj.get("status") or {}).get("active")) < count:  # noqa: ASYNC110
        await asyncio.sleep(0.05)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    sim_cpu = process_cpu(sim_pid) - sim_cpu
    print(f"{count} CronJobs due at the same minute (kubesim in its own process, QPS limits off)")
    print(
        f"{'jobs s':>8} {'status s':>9} {'manager cpu s':>14} {'kubesim cpu s':>14}"
        f" {'manager ms/job':>15}  limit"
    )
    limit = "kubesim" if sim_cpu > cpu else "manager"
    print(f"{jobs_wall:8.2f} {wall:9.2f} {cpu:14.2f} {sim_cpu:14.2f} {1000 * cpu / count:15.3f}  {limit}")


async def idle(manager: Manager, client: ApiClient, seconds: float) -> None:
    ctl = controller_of(manager, CronJobController)
    await create_all(client, 1000)
    await settle(ctl, 1000)
    cpu = time.process_time()
    await asyncio.sleep(seconds)  # the measurement window itself, not a synchronisation
    cpu = time.process_time() - cpu
    print(f"1000 hourly CronJobs between schedule times for {seconds:.0f} s")
    print(
        f"manager cpu: {cpu:.3f} s ({100 * cpu / seconds:.2f} % of one core);"
        f" reconciles: {ctl.stats.reconciles}"
    )


async def bench(scenario: str, arg: float, url: str, sim_pid: int) -> None:
    client = await create_client(master=url, qps=0)
    try:
        async with run_manager(
            url, CronJobController, flags={"log_level": "warning"}, sync_timeout=60
        ) as manager:
            if scenario == "due":
                await due(manager, client, int(arg), sim_pid)
            else:
                await idle(manager, client, arg)
    finally:
        await client.close()


def main() -> None:
    scenario = sys.argv[1] if len(sys.argv) > 1 else "due"
    if scenario not in ("due", "idle"):
        sys.exit(f"unknown scenario {scenario!r}: due or idle")
    arg = float(sys.argv[2]) if len(sys.argv) > 2 else (1000 if scenario == "due" else 20)
    configure_logging("json", "warning")
    with running_kubesim("--nodes", "1", "--history-size", "200000") as (pid, url):
        asyncio.run(bench(scenario, arg, url, pid))


if __name__ == "__main__":
    main()
