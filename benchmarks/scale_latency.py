"""Reaction latency for `scale.py`: from a write to the controller's first write in response, as seen by a
watch of this process.

Two kinds of write, alternated at a fixed rate so they do not queue behind each other:
- a ReplicaSet of the fixture scaled up by one (merge patch of spec.replicas): the ReplicaSet controller
  creates a pod;
- a new one-pod Job: the Job controller creates its pod.
The clock starts just before the write is sent and stops when this process's own watch of pods (all
namespaces) delivers the ADDED event of the pod the controller created (matched by its controller owner). It
therefore includes two kubesim watch deliveries and the write's request. The `echo` figure is that overhead
alone: a pod this process creates, timed from the request to its own ADDED event.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from typing import Any

from manager import JOBS, PODS, REPLICASETS, ApiClient

Obj = dict[str, Any]


@dataclass
class Latencies:
    replicaset: list[float] = field(default_factory=list)
    job: list[float] = field(default_factory=list)
    echo: list[float] = field(default_factory=list)
    lost: int = 0  # writes whose pod was not seen within the timeout


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100); NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[rank]


def _job(namespace: str, name: str) -> Obj:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}
            }
        },
    }


def _owner_key(pod: Obj) -> tuple[str, str, str] | None:
    meta = pod.get("metadata") or {}
    for ref in meta.get("ownerReferences") or ():
        if ref.get("controller"):
            return (meta.get("namespace", ""), ref.get("kind", ""), ref.get("name", ""))
    if not meta.get("ownerReferences"):
        return (meta.get("namespace", ""), "Pod", meta.get("name", ""))
    return None


class PodWatch:
    """Resolves a future per expected (namespace, owner kind, owner name) when its pod's ADDED arrives."""

    def __init__(self, client: ApiClient) -> None:
        self.client = client
        self.waiting: dict[tuple[str, str, str], asyncio.Future[float]] = {}
        self.task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        listed = await self.client.list(PODS, limit=1)
        rv = listed["metadata"]["resourceVersion"]
        self.task = asyncio.create_task(self._run(rv))

    async def _run(self, rv: str) -> None:
        async for event_type, obj in self.client.watch(PODS, resource_version=rv, timeout_seconds=3600):
            if event_type != "ADDED":
                continue
            seen = time.perf_counter()
            key = _owner_key(obj)
            future = self.waiting.pop(key, None) if key else None
            if future is not None and not future.done():
                future.set_result(seen)

    def expect(self, key: tuple[str, str, str]) -> asyncio.Future[float]:
        future: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self.waiting[key] = future
        return future

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task


async def _timed(
    watch: PodWatch, key: tuple[str, str, str], write: Any, out: list[float], result: Latencies
) -> None:
    future = watch.expect(key)
    started = time.perf_counter()
    await write
    try:
        seen = await asyncio.wait_for(future, 10)
    except TimeoutError:
        watch.waiting.pop(key, None)
        result.lost += 1
        return
    out.append(seen - started)


async def measure(
    client: ApiClient,
    namespaces: list[str],
    replicasets: list[tuple[str, str, int]],
    writes: int,
    rate: float,
) -> Latencies:
    """`writes` of each kind alternated at `rate` writes/s in all; `replicasets` are (ns, name, replicas)
    to scale, one write each. Plus `writes // 10` echo pods, spread between them."""
    result = Latencies()
    watch = PodWatch(client)
    await watch.start()
    stamp = int(time.time())
    pending: list[asyncio.Task[None]] = []
    try:
        for i in range(2 * writes):
            k = i // 2
            if i % 2 == 0:
                namespace, name, replicas = replicasets[k % len(replicasets)]
                patch = client.patch(REPLICASETS, name, {"spec": {"replicas": replicas + 1}}, namespace)
                coro = _timed(watch, (namespace, "ReplicaSet", name), patch, result.replicaset, result)
            else:
                namespace = namespaces[k % len(namespaces)]
                name = f"lat-{stamp}-{k}"
                create = client.create(JOBS, _job(namespace, name), namespace)
                coro = _timed(watch, (namespace, "Job", name), create, result.job, result)
            pending.append(asyncio.create_task(coro))
            if i % 20 == 10:  # an echo pod now and then: the watch path alone
                namespace, name = namespaces[0], f"echo-{stamp}-{i}"
                body = {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": name, "namespace": namespace},
                    "spec": {"containers": [{"name": "main", "image": "busybox"}]},
                }
                echo = client.create(PODS, body, namespace)
                pending.append(
                    asyncio.create_task(_timed(watch, (namespace, "Pod", name), echo, result.echo, result))
                )
            await asyncio.sleep(1 / rate)
        await asyncio.gather(*pending)
    finally:
        await watch.stop()
    return result
