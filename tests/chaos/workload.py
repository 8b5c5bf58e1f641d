"""The workload the controllers run through the chaos: Jobs of four kinds, a ReplicaSet that is scaled up and
down, and a Deployment rolled again and again. Pod behaviour comes from kubesim's kubelet annotations."""

from __future__ import annotations

import time
from typing import Any

Obj = dict[str, Any]

NAMESPACE = "chaos"
KUBESIM_ANNOTATIONS = "kubesim.aiokcm.io/"
REPLICASET = "rs-scaled"
DEPLOYMENT = "web"
DEPLOYMENT_REPLICAS, MAX_SURGE = 3, 1

# kind -> (parallelism, completions, completion mode, backoffLimit, pod annotations)
JOB_KINDS: dict[str, tuple[int, int, str, int, dict[str, str]]] = {
    "plain": (3, 6, "NonIndexed", 6, {"run-seconds": "0.5"}),
    "indexed": (2, 5, "Indexed", 6, {"run-seconds": "0.5"}),
    # the first attempt of each index fails, the retry succeeds (after the job's pod-failure backoff)
    "flaky": (2, 3, "Indexed", 6, {"run-seconds": "0.3", "fail-attempts": "1"}),
    # every attempt fails and no retry is allowed: the Job ends Failed
    "doomed": (1, 2, "NonIndexed", 0, {"run-seconds": "0.3", "exit-code": "1"}),
}
INITIAL_JOBS = ("plain", "indexed", "flaky", "doomed")


def _annotations(short: dict[str, str]) -> dict[str, str]:
    return {KUBESIM_ANNOTATIONS + key: value for key, value in short.items()}


def namespace() -> Obj:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}


def job(name: str, kind: str) -> Obj:
    parallelism, completions, mode, backoff_limit, annotations = JOB_KINDS[kind]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"chaos/kind": kind}},
        "spec": {
            "parallelism": parallelism,
            "completions": completions,
            "completionMode": mode,
            "backoffLimit": backoff_limit,
            "template": {
                "metadata": {"annotations": _annotations(annotations)},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "work", "image": "busybox"}],
                },
            },
        },
    }


def _pod_template(labels: dict[str, str], revision: int = 0) -> Obj:
    return {
        "metadata": {
            "labels": labels,
            "annotations": _annotations({"ready-after-seconds": "0.2", "revision": str(revision)}),
        },
        "spec": {"containers": [{"name": "serve", "image": "nginx"}]},
    }


def replicaset(replicas: int) -> Obj:
    labels = {"app": REPLICASET}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": REPLICASET, "namespace": NAMESPACE},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": _pod_template(labels),
        },
    }


def deployment() -> Obj:
    labels = {"app": DEPLOYMENT}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": DEPLOYMENT, "namespace": NAMESPACE},
        "spec": {
            "replicas": DEPLOYMENT_REPLICAS,
            "selector": {"matchLabels": labels},
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": MAX_SURGE, "maxUnavailable": 0},
            },
            "template": _pod_template(labels),
        },
    }


def rollout_patch(revision: int) -> Obj:
    """A template change: a new ReplicaSet and a rolling update."""
    return {
        "spec": {"template": {"metadata": {"annotations": {KUBESIM_ANNOTATIONS + "revision": str(revision)}}}}
    }


def scale_patch(replicas: int) -> Obj:
    return {"spec": {"replicas": replicas}}


def progress_patch() -> Obj:
    """A write that changes nothing the controllers act on, for a ReplicaSet event at the current revision."""
    return {"metadata": {"annotations": {"chaos/progress": str(time.time())}}}
