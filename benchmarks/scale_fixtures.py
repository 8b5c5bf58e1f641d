"""The cluster `scale.py` runs the manager against, written straight into a kubesim data directory.

Creating 120k objects through the API costs minutes of kubesim CPU (admission, JSON, watch fan-out per
request). Instead one object of each kind (a namespace, a ReplicaSet, a Job, a Running and a Succeeded pod)
is created through the API of an in-process kubesim whose kubelet runs the pods, so each carries what
admission and the kubelet write (defaults, managedFields, a full status); the fixture is copies of those,
renamed and re-owned, put into a `Store` with the SQLite journal attached (`kubesim.storage.durable`). A
`kubesim --data-dir DIR` started afterwards serves them as if they had been created one by one.

The state is settled, so that a manager that has synced its caches has nothing to do:
- ReplicaSets: `replicas` Running and Ready pods each, status counts and observedGeneration matching;
- Jobs: `completions` Succeeded pods each (no tracking finalizer left), status Complete with the counts.
"""

from __future__ import annotations

import asyncio
import gc
import time
import uuid
from dataclasses import dataclass
from typing import Any

import orjson

from kubesim import KubeSim
from kubesim.storage.durable import SqliteJournal
from kubesim.storage.store import Store, format_time
from manager import JOBS, NAMESPACES, PODS, REPLICASETS, ApiClient
from manager.client.rest import create_client

Obj = dict[str, Any]
BATCH = 5_000  # creates per event-loop turn: the journal saves one transaction per turn


@dataclass(frozen=True)
class Shape:
    """How many of each object, and how the pods split between their owners."""

    pods: int
    jobs: int
    replicasets: int
    namespaces: int

    @property
    def pods_per_rs(self) -> int:
        return (self.pods // 2) // self.replicasets if self.replicasets else 0

    @property
    def pods_per_job(self) -> int:
        rs_pods = self.pods_per_rs * self.replicasets
        return (self.pods - rs_pods) // self.jobs if self.jobs else 0

    def namespace(self, i: int) -> str:
        return f"scale-{i % self.namespaces}"


def _container() -> Obj:
    return {
        "name": "app",
        "image": "registry.example/app:1.4.2",
        "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
        "env": [{"name": "LOG_LEVEL", "value": "info"}],
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
    }


def _pod_template(labels: dict[str, str], restart: str, annotations: dict[str, str]) -> Obj:
    return {
        "metadata": {"labels": labels, "annotations": annotations},
        "spec": {"restartPolicy": restart, "containers": [_container()]},
    }


async def _wait_phase(client: ApiClient, name: str, phase: str) -> Obj:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        pod = await client.get(PODS, name, "default")
        if (pod.get("status") or {}).get("phase") == phase:
            return pod
        await asyncio.sleep(0.05)
    raise RuntimeError(f"template pod {name} did not reach {phase}")


async def templates() -> dict[str, Obj]:
    """One admitted object of each kind, the pods run by kubesim's kubelet to Running / Succeeded."""
    async with KubeSim(nodes=3) as sim:
        client = await create_client(master=sim.url, qps=0)
        try:
            rs_body = {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "metadata": {"name": "tpl-rs", "labels": {"app": "tpl-rs"}},
                "spec": {
                    "replicas": 1,
                    "selector": {"matchLabels": {"app": "tpl-rs"}},
                    "template": _pod_template({"app": "tpl-rs"}, "Always", {}),
                },
            }
            job_body = {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": "tpl-job"},
                "spec": {"template": _pod_template({}, "Never", {})},
            }
            running = _pod_template({"app": "tpl-rs"}, "Always", {})
            running["metadata"]["name"] = "tpl-running"
            done = _pod_template({}, "Never", {"kubesim.aiokcm.io/run-seconds": "0"})
            done["metadata"]["name"] = "tpl-done"
            out = {
                "namespace": await client.create(NAMESPACES, {"metadata": {"name": "tpl-ns"}}),
                "replicaset": await client.create(REPLICASETS, rs_body, "default"),
                "job": await client.create(JOBS, job_body, "default"),
            }
            await client.create(PODS, {"apiVersion": "v1", "kind": "Pod", **running}, "default")
            await client.create(PODS, {"apiVersion": "v1", "kind": "Pod", **done}, "default")
            out["running"] = await _wait_phase(client, "tpl-running", "Running")
            out["succeeded"] = await _wait_phase(client, "tpl-done", "Succeeded")
            return out
        finally:
            await client.close()


def _named(template: bytes, namespace: str, name: str, uid: str | None = None) -> Obj:
    obj: Obj = orjson.loads(template)  # a fresh deep copy each time, faster than copy.deepcopy
    meta = obj["metadata"]
    for key in ("resourceVersion", "uid", "generateName"):
        meta.pop(key, None)
    meta["name"] = name
    if namespace:
        meta["namespace"] = namespace
    meta["uid"] = uid or str(uuid.uuid4())
    return obj


def _owner(kind: str, api_version: str, name: str, uid: str) -> list[Obj]:
    return [
        {
            "apiVersion": api_version,
            "kind": kind,
            "name": name,
            "uid": uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def _replicaset_objects(tpl: dict[str, bytes], shape: Shape, i: int) -> list[tuple[str, Obj]]:
    ns, name, n = shape.namespace(i), f"rs-{i}", shape.pods_per_rs
    rs = _named(tpl["replicaset"], ns, name)
    labels = {"app": name}
    rs["metadata"]["labels"] = labels
    rs["spec"]["replicas"] = n
    rs["spec"]["selector"] = {"matchLabels": labels}
    rs["spec"]["template"]["metadata"]["labels"] = labels
    generation = rs["metadata"].get("generation", 1)
    rs["status"] = {"replicas": n, "observedGeneration": generation}
    if n:
        rs["status"].update(fullyLabeledReplicas=n, readyReplicas=n, availableReplicas=n)
    out = [("replicasets.apps", rs)]
    uid = rs["metadata"]["uid"]
    for j in range(n):
        pod = _named(tpl["running"], ns, f"{name}-{j}")
        pod["metadata"]["labels"] = labels
        pod["metadata"]["ownerReferences"] = _owner("ReplicaSet", "apps/v1", name, uid)
        out.append(("pods", pod))
    return out


def _job_objects(tpl: dict[str, bytes], shape: Shape, i: int, now: str) -> list[tuple[str, Obj]]:
    ns, name, n = shape.namespace(i), f"job-{i}", shape.pods_per_job
    uid = str(uuid.uuid4())
    job = _named(tpl["job"], ns, name, uid)
    labels = {
        "batch.kubernetes.io/controller-uid": uid,
        "batch.kubernetes.io/job-name": name,
        "controller-uid": uid,
        "job-name": name,
    }
    job["spec"]["completions"] = job["spec"]["parallelism"] = max(n, 1)
    job["spec"]["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    job["spec"]["template"]["metadata"]["labels"] = labels
    job["metadata"]["labels"] = dict(labels)
    conditions = [
        {
            "type": kind,
            "status": "True",
            "lastProbeTime": now,
            "lastTransitionTime": now,
            "reason": "CompletionsReached",
            "message": "Reached expected number of succeeded pods",
        }
        for kind in ("SuccessCriteriaMet", "Complete")
    ]
    job["status"] = {
        "conditions": conditions,
        "startTime": now,
        "completionTime": now,
        "succeeded": n,
        "ready": 0,
        "terminating": 0,
        "uncountedTerminatedPods": {},
    }
    out = [("jobs.batch", job)]
    for j in range(n):
        pod = _named(tpl["succeeded"], ns, f"{name}-{j}")
        pod["metadata"]["labels"] = dict(labels)
        pod["metadata"]["ownerReferences"] = _owner("Job", "batch/v1", name, uid)
        pod["metadata"].pop("finalizers", None)
        out.append(("pods", pod))
    return out


async def write_data_dir(data_dir: str, shape: Shape, managed_fields: bool = True) -> float:
    """Fill an empty kubesim data directory with the fixture; returns the seconds it took. Without
    `managed_fields` the objects are stored without metadata.managedFields."""
    started = time.monotonic()
    objects = await templates()
    if not managed_fields:
        for obj in objects.values():
            obj["metadata"].pop("managedFields", None)
    tpl = {kind: orjson.dumps(obj) for kind, obj in objects.items()}
    store = Store(history_size=1000)
    journal = SqliteJournal.open(data_dir)
    journal.load(store)
    journal.attach(store)
    now = format_time(time.time())
    gc.disable()  # 100k+ live dicts: the cyclic collector's full passes made loading quadratic-ish
    try:
        pending: list[tuple[str, Obj]] = []
        for k in range(shape.namespaces):
            namespace = _named(tpl["namespace"], "", shape.namespace(k))
            namespace["metadata"]["labels"] = {"kubernetes.io/metadata.name": shape.namespace(k)}
            pending.append(("namespaces", namespace))
        for i in range(shape.replicasets):
            pending.extend(_replicaset_objects(tpl, shape, i))
            if len(pending) >= BATCH:
                _create_all(store, pending)
                await asyncio.sleep(0)  # the journal commits this turn's creates in one transaction
        for i in range(shape.jobs):
            pending.extend(_job_objects(tpl, shape, i, now))
            if len(pending) >= BATCH:
                _create_all(store, pending)
                await asyncio.sleep(0)
        _create_all(store, pending)
        await asyncio.sleep(0)
    finally:
        gc.enable()
        journal.close()
    return time.monotonic() - started


def _create_all(store: Store, pending: list[tuple[str, Obj]]) -> None:
    for resource, obj in pending:
        store.create(resource, obj)
    pending.clear()
