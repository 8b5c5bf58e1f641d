"""A rolling update of one N-replica Deployment (maxSurge 25 %, maxUnavailable 25 %) with the real manager
(deployment-controller and replicaset-controller) against kubesim in a separate process, client-side rate
limits off. Prints wall time and CPU seconds of both processes for the rollout, and the manager's CPU per
pod replaced: whichever process burns more CPU is the limit.

    .venv/bin/python benchmarks/deployment_rollout.py [N]          (default N = 1000)

Set-up (not measured): the Deployment is created and rolled out to N Ready pods. Measured: from the image
change until the Deployment reports the rollout complete (N updated and available replicas, no old ones)
and the old ReplicaSet's pods are all gone. Pods become Ready as soon as they run and are removed at once
when deleted. The manager's CPU is this process's time.process_time(), the benchmark's own polling (one
GET every 100 ms) included.
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any

from kubesim_process import process_cpu, running_kubesim

from manager import DEPLOYMENTS, PODS
from manager.cli.logging import configure_logging
from manager.cli.plugins import discover
from manager.client.rest import ApiClient, create_client
from manager.testing import run_manager

CONTROLLERS = ("deployment-controller", "replicaset-controller")


def deployment(count: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "bench", "namespace": "default"},
        "spec": {
            "replicas": count,
            "selector": {"matchLabels": {"app": "bench"}},
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
            },
            "template": {
                "metadata": {
                    "labels": {"app": "bench"},
                    "annotations": {
                        "kubesim.aiokcm.io/ready-after-seconds": "0",
                        "kubesim.aiokcm.io/terminate-seconds": "0",
                    },
                },
                "spec": {"containers": [{"name": "main", "image": "nginx:1"}]},
            },
        },
    }


async def rolled_out(client: ApiClient, count: int, image: str) -> None:
    while True:
        d = await client.get(DEPLOYMENTS, "bench", "default")
        s = d.get("status") or {}
        done = (
            s.get("observedGeneration", 0) >= d["metadata"]["generation"]
            and s.get("updatedReplicas") == count
            and s.get("replicas") == count
            and s.get("availableReplicas") == count
        )
        if done:
            pods = (await client.list(PODS, "default", label_selector="app=bench"))["items"]
            images = {p["spec"]["containers"][0]["image"] for p in pods}
            if len(pods) == count and images == {image}:
                return
        await asyncio.sleep(0.1)


async def bench(count: int, url: str, sim_pid: int) -> None:
    classes = [info.cls for info in discover() if info.name in CONTROLLERS]
    client = await create_client(master=url, qps=0)
    try:
        async with run_manager(url, *classes, flags={"log_level": "warning"}, sync_timeout=60):
            await client.create(DEPLOYMENTS, deployment(count), "default")
            await rolled_out(client, count, "nginx:1")
            wall, cpu, sim_cpu = time.perf_counter(), time.process_time(), process_cpu(sim_pid)
            patch = {"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "nginx:2"}]}}}}
            await client.patch(DEPLOYMENTS, "bench", patch, "default", patch_type="strategic")
            await rolled_out(client, count, "nginx:2")
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            sim_cpu = process_cpu(sim_pid) - sim_cpu
    finally:
        await client.close()
    limit = "kubesim" if sim_cpu > cpu else "manager"
    print(
        f"deployment rolling update of {count} pods, surge 25% / unavailable 25% (kubesim in its own process)"
    )
    print(f"{'wall s':>8} {'manager cpu s':>14} {'kubesim cpu s':>14} {'manager ms/pod':>15}  limit")
    print(f"{wall:8.2f} {cpu:14.2f} {sim_cpu:14.2f} {1000 * cpu / count:15.3f}  {limit}")


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    configure_logging("json", "warning")
    with running_kubesim("--nodes", "10", "--history-size", "200000") as (pid, url):
        asyncio.run(bench(count, url, pid))


if __name__ == "__main__":
    main()
