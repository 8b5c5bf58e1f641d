"""Scale one ReplicaSet 0 → N → 0 pods with the real manager (replicaset-controller only) against kubesim in
a separate process, client-side rate limits off. Prints wall time and CPU seconds of both processes per
phase, and the manager's CPU per pod created / deleted: whichever process burns more CPU is the limit.

    .venv/bin/python benchmarks/replicaset_scale.py [N]          (default N = 5000)

Phase "up" ends when status.replicas = N (every pod created and seen by the controller); phase "down" ends
when status.replicas = 0 (every pod deleted and the deletion observed). The manager's CPU is this process's
time.process_time(); the benchmark's own polling (one GET of the ReplicaSet every 100 ms) is included.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from typing import Any

from kubesim_process import process_cpu, running_kubesim

from manager import REPLICASETS
from manager.cli.logging import configure_logging
from manager.cli.plugins import discover
from manager.client.rest import create_client
from manager.config.settings import Settings
from manager.lifecycle.cluster import install
from manager.lifecycle.manager import Manager


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


async def bench(count: int, url: str, sim_pid: int) -> None:
    settings = Settings(
        master=url,
        controllers=["replicaset"],
        leader_elect=False,
        bind_address="127.0.0.1",
        port=0,
        kube_api_qps=0,
        log_level="warning",
    )
    infos = [info for info in discover() if info.name == "replicaset-controller"]
    manager = Manager(settings, infos, install=install)
    task = asyncio.create_task(manager.run(handle_signals=False))
    client = await create_client(master=url, qps=0)
    try:
        while not getattr(manager.cluster, "controllers", None):  # noqa: ASYNC110
            await asyncio.sleep(0.05)

        async def until_replicas(value: int) -> None:
            while True:
                rs = await client.get(REPLICASETS, "bench", "default")
                if int((rs.get("status") or {}).get("replicas") or 0) == value:
                    return
                await asyncio.sleep(0.1)

        rows = []
        for phase, target in (("up", count), ("down", 0)):
            wall, cpu, sim_cpu = time.perf_counter(), time.process_time(), process_cpu(sim_pid)
            if phase == "up":
                await client.create(REPLICASETS, replicaset(count), "default")
            else:
                await client.patch(REPLICASETS, "bench", {"spec": {"replicas": 0}}, "default")
            await until_replicas(target)
            rows.append(
                (
                    phase,
                    time.perf_counter() - wall,
                    time.process_time() - cpu,
                    process_cpu(sim_pid) - sim_cpu,
                )
            )
        print(f"replicaset 0 -> {count} -> 0 pods (kubesim in a separate process, QPS limits off)")
        header = ("phase", "wall s", "manager cpu s", "kubesim cpu s", "manager ms/pod")
        print(f"{header[0]:6} {header[1]:>8} {header[2]:>14} {header[3]:>14} {header[4]:>15}  limit")
        for phase, wall, cpu, sim_cpu in rows:
            limit = "kubesim" if sim_cpu > cpu else "manager"
            print(f"{phase:6} {wall:8.2f} {cpu:14.2f} {sim_cpu:14.2f} {1000 * cpu / count:15.3f}  {limit}")
    finally:
        manager.request_shutdown("benchmark done")
        with contextlib.suppress(Exception):
            await asyncio.wait_for(task, 10)
        await client.close()


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    configure_logging("json", "warning")
    with running_kubesim("--nodes", "10", "--history-size", "200000") as (pid, url):
        asyncio.run(bench(count, url, pid))


if __name__ == "__main__":
    main()
