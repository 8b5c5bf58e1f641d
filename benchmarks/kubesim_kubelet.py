"""How fast kubesim's simulated scheduler + kubelet move pods Pending → Running → Succeeded (and remove them).

In-process against the store (no HTTP), so the figure is the kubelet's own cost: N pods are created at once,
then the clock runs until every pod has Succeeded; a second phase deletes them all and waits until they
are gone.
Each pod costs the kubelet 3 writes to finish (bind, start, exit) and 1 to be removed (a running pod: 2).

    .venv/bin/python benchmarks/kubesim_kubelet.py [N ...]
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time

from kubesim.kubelet import Kubelet
from kubesim.store import Store, WatchEvent

ROUNDS = 3


def pod(i: int) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"bench-{i}",
            "namespace": "default",
            "annotations": {"kubesim.aiokcm.io/run-seconds": "0", "kubesim.aiokcm.io/terminate-seconds": "0"},
        },
        "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox:1.36"}]},
    }


async def run(count: int) -> tuple[float, float, float, float]:
    """One round: (store creates/s, lifecycle pods/s wall, lifecycle pods per CPU second, removals/s)."""
    store = Store(history_size=10 * count)
    kubelet = Kubelet(store, nodes=3, seed=1)
    await kubelet.start()
    succeeded = asyncio.Event()
    removed = asyncio.Event()
    done = {"Succeeded": 0, "deleted": 0, "running": 0}

    def count_event(event: WatchEvent) -> None:
        if event.type == "DELETED":
            done["deleted"] += 1
            if done["deleted"] == count:
                removed.set()
            return
        phase = event.obj.get("status", {}).get("phase")
        old_phase = event.old.obj.get("status", {}).get("phase") if event.old else None
        if phase != old_phase and phase in ("Running", "Succeeded"):
            done[phase if phase == "Succeeded" else "running"] += 1
            if done["Succeeded"] == count:
                succeeded.set()

    store.subscribe("pods", count_event)
    rv_before = store.resource_version
    started = time.perf_counter()
    for i in range(count):
        store.create("pods", pod(i))
    created = time.perf_counter()
    cpu_before = time.process_time()
    await asyncio.wait_for(succeeded.wait(), timeout=600)
    finished = time.perf_counter()
    cpu = time.process_time() - cpu_before
    writes = store.resource_version - rv_before - count

    for i in range(count):
        obj = store.get("pods", "default", f"bench-{i}")
        assert obj is not None
        # what the API server does for a graceful pod delete: set deletionTimestamp, the kubelet does the rest
        obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        obj["metadata"]["deletionGracePeriodSeconds"] = 30
        store.update("pods", obj)
    deleting = time.perf_counter()
    await asyncio.wait_for(removed.wait(), timeout=600)
    gone = time.perf_counter()
    await kubelet.stop()

    assert writes == 3 * count, writes  # bind, start, exit
    return count / (created - started), count / (finished - created), count / cpu, count / (gone - deleting)


def main() -> None:
    counts = [int(arg) for arg in sys.argv[1:]] or [1000, 5000]
    print(f"kubesim simulated scheduler+kubelet, in-process, one asyncio loop (median of {ROUNDS} rounds)")
    for count in counts:
        rounds = [asyncio.run(run(count)) for _ in range(ROUNDS)]
        create, lifecycle, per_cpu, removal = (statistics.median(r[i] for r in rounds) for i in range(4))
        print(
            f"{count:>6} pods: Pending→Running→Succeeded {lifecycle:>6.0f} pods/s wall, "
            f"{per_cpu:>6.0f} pods per CPU-second ({3 * per_cpu:>6.0f} kubelet writes/CPU-s) | "
            f"terminating→removed {removal:>6.0f} pods/s | store creates {create:>6.0f}/s"
        )


if __name__ == "__main__":
    main()
