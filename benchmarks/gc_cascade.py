"""The garbage collector against kubesim in a process of its own, with the real manager (replicaset-controller
and garbage-collector-controller), client-side rate limits off.

    .venv/bin/python benchmarks/gc_cascade.py cascade [N]     (default N = 5000)
    .venv/bin/python benchmarks/gc_cascade.py wait [SECONDS]  (default 30)

`cascade`: one ReplicaSet scaled to N pods, then deleted as `kubectl delete` does (propagationPolicy
Background). Prints the time from the DELETE until the last pod is gone, the manager's and kubesim's CPU over
that time, and the manager's CPU per pod deleted: whichever process burns more CPU is the limit.

`wait`: an owner deleted with Foreground whose dependent carries a finalizer nobody removes, so the owner
waits on it; prints the manager's CPU over SECONDS of that wait (a graph that spins shows here).

The manager's CPU is this process's time.process_time(); the benchmark's own polling (a one-item LIST every
250 ms) is included.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from typing import Any

from kubesim_process import process_cpu, running_kubesim

from manager import CONFIGMAPS, PODS, REPLICASETS
from manager.cli.logging import configure_logging
from manager.cli.plugins import discover
from manager.client.rest import ApiClient, create_client
from manager.testing import run_manager

CONTROLLERS = ("replicaset-controller", "garbage-collector-controller")


def replicaset(count: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "bench", "namespace": "default"},
        "spec": {
            "replicas": count,
            "selector": {"matchLabels": {"app": "bench"}},
            "template": {
                "metadata": {
                    "labels": {"app": "bench"},
                    "annotations": {"kubesim.aiokcm.io/terminate-seconds": "0"},
                },
                "spec": {"containers": [{"name": "main", "image": "nginx:1.27"}]},
            },
        },
    }


def manager_running(url: str) -> contextlib.AbstractAsyncContextManager[Any]:
    classes = [info.cls for info in discover() if info.name in CONTROLLERS]
    return run_manager(url, *classes, flags={"log_level": "warning"}, sync_timeout=60)


async def poll(check: Any, every: float = 0.25) -> None:
    while not await check():  # noqa: ASYNC110 - polling the API server is what is measured around
        await asyncio.sleep(every)


async def cascade(client: ApiClient, count: int, sim_pid: int) -> None:
    await client.create(REPLICASETS, replicaset(count), "default")

    async def all_created() -> bool:
        rs = await client.get(REPLICASETS, "bench", "default")
        return int((rs.get("status") or {}).get("replicas") or 0) == count

    await poll(all_created)

    async def pods_gone() -> bool:
        page = await client.list(PODS, "default", label_selector="app=bench", limit=1)
        return not page["items"]

    wall, cpu, sim_cpu = time.perf_counter(), time.process_time(), process_cpu(sim_pid)
    await client.delete(REPLICASETS, "bench", "default", propagation_policy="Background")
    await poll(pods_gone)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    sim_cpu = process_cpu(sim_pid) - sim_cpu
    print(f"delete a ReplicaSet of {count} pods, Background (kubesim in its own process, QPS limits off)")
    print(f"{'wall s':>8} {'manager cpu s':>14} {'kubesim cpu s':>14} {'manager ms/pod':>15}  limit")
    limit = "kubesim" if sim_cpu > cpu else "manager"
    print(f"{wall:8.2f} {cpu:14.2f} {sim_cpu:14.2f} {1000 * cpu / count:15.3f}  {limit}")


async def wait(client: ApiClient, seconds: float) -> None:
    owner = await client.create(CONFIGMAPS, {"metadata": {"name": "owner", "namespace": "default"}})
    ref = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "owner",
        "uid": owner["metadata"]["uid"],
        "blockOwnerDeletion": True,
    }
    meta = {"name": "stuck", "namespace": "default", "finalizers": ["example.com/never"]}
    await client.create(CONFIGMAPS, {"metadata": {**meta, "ownerReferences": [ref]}})
    await client.delete(CONFIGMAPS, "owner", "default", propagation_policy="Foreground")

    async def dependent_terminating() -> bool:
        dependent = await client.get(CONFIGMAPS, "stuck", "default")
        return bool(dependent["metadata"].get("deletionTimestamp"))

    await poll(dependent_terminating)
    cpu = time.process_time()
    await asyncio.sleep(seconds)  # the measurement window itself, not a synchronisation
    cpu = time.process_time() - cpu
    still = await client.get(CONFIGMAPS, "owner", "default")
    print(f"owner waiting on a dependent's finalizer for {seconds:.0f} s")
    print(f"owner finalizers: {still['metadata'].get('finalizers')}")
    print(f"manager cpu: {cpu:.3f} s ({100 * cpu / seconds:.2f} % of one core)")


async def bench(scenario: str, arg: float, url: str, sim_pid: int) -> None:
    client = await create_client(master=url, qps=0)
    try:
        async with manager_running(url):
            if scenario == "cascade":
                await cascade(client, int(arg), sim_pid)
            else:
                await wait(client, arg)
    finally:
        await client.close()


def main() -> None:
    scenario = sys.argv[1] if len(sys.argv) > 1 else "cascade"
    if scenario not in ("cascade", "wait"):
        sys.exit(f"unknown scenario {scenario!r}: cascade or wait")
    default = 5000 if scenario == "cascade" else 30
    arg = float(sys.argv[2]) if len(sys.argv) > 2 else default
    configure_logging("json", "warning")
    with running_kubesim("--nodes", "10", "--history-size", "200000") as (pid, url):
        asyncio.run(bench(scenario, arg, url, pid))


if __name__ == "__main__":
    main()
