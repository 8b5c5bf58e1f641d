"""How fast kubesim's simulated scheduler + kubelet move pods Pending → Running → Succeeded (and remove them).

In-process against the store (no HTTP), so the figure is the kubelet's own cost: N pods are created at once,
then the clock runs until every pod has Succeeded; a second phase deletes them all and waits until they
are gone.
Each pod costs the kubelet 3 writes to finish (bind, start, exit) and 1 to be removed (a running pod: 2).

    .venv/bin/python benchmarks/kubesim_kubelet.py [N ...]
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import sys
import time

from kubesim.kubelet.kubelet import Kubelet
from kubesim.storage.store import Store, WatchEvent

ROUNDS = 3


class GcTimer:
    """CPU seconds spent in the cyclic garbage collector (the store's history makes the heap grow)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._started = 0.0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.process_time()
        else:
            self.seconds += time.process_time() - self._started


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


async def run(count: int, gc_timer: GcTimer) -> tuple[float, float, float, float, float]:
    """One round: (store creates/s, lifecycle pods/s wall, pods per CPU second, GC share, removals/s)."""
    store = Store()  # kubesim's default history size
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
    cpu_before, gc_before = time.process_time(), gc_timer.seconds
    await asyncio.wait_for(succeeded.wait(), timeout=600)
    finished = time.perf_counter()
    cpu, gc_share = time.process_time() - cpu_before, gc_timer.seconds - gc_before
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
    lifecycle = finished - created
    return (
        count / (created - started),
        count / lifecycle,
        count / cpu,
        gc_share / cpu,
        count / (gone - deleting),
    )


def main() -> None:
    counts = [int(arg) for arg in sys.argv[1:]] or [1000, 5000]
    print(f"kubesim simulated scheduler+kubelet, in-process, one asyncio loop (median of {ROUNDS} rounds)")
    gc_timer = GcTimer()
    for count in counts:
        rounds = [asyncio.run(run(count, gc_timer)) for _ in range(ROUNDS)]
        create, lifecycle, per_cpu, gc_share, removal = (
            statistics.median(r[i] for r in rounds) for i in range(5)
        )
        print(
            f"{count:>6} pods: Pending→Running→Succeeded {lifecycle:>6.0f} pods/s wall, "
            f"{per_cpu:>6.0f} pods per CPU-second ({3 * per_cpu:>6.0f} kubelet writes/CPU-s, "
            f"{gc_share:.0%} of it cyclic GC) | terminating→removed {removal:>6.0f} pods/s | "
            f"store creates {create:>6.0f}/s"
        )


if __name__ == "__main__":
    main()
