"""The objects of the RBAC scenario (scenario.py): small workloads whose pods run 0.1 s in kubesim."""

from __future__ import annotations

from typing import Any

NS = "default"


def pod_template(labels: dict[str, str], annotations: dict[str, str], policy: str) -> dict[str, Any]:
    return {
        "metadata": {"labels": labels, "annotations": annotations},
        "spec": {"restartPolicy": policy, "containers": [{"name": "main", "image": "busybox:1"}]},
    }


def flaky_job() -> dict[str, Any]:
    annotations = {"kubesim.aiokcm.io/run-seconds": "0.1", "kubesim.aiokcm.io/fail-attempts": "1"}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "flaky", "namespace": NS},
        "spec": {
            "backoffLimit": 2,
            "ttlSecondsAfterFinished": 0,
            "template": pod_template({}, annotations, "Never"),
        },
    }


def deployment() -> dict[str, Any]:
    labels = {"app": "web"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": NS},
        "spec": {
            "replicas": 2,
            "revisionHistoryLimit": 0,  # every old ReplicaSet deleted once the rollout completes
            "selector": {"matchLabels": labels},
            "template": pod_template(labels, {}, "Always"),
        },
    }


def replicaset(name: str, namespace: str = NS, app: str = "", replicas: int = 1) -> dict[str, Any]:
    labels = {"app": app or name}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": pod_template(labels, {}, "Always"),
        },
    }


def cronjob() -> dict[str, Any]:
    """Each run outlives the hour, and the next one replaces it (the controller reads and deletes it)."""
    template = pod_template({}, {"kubesim.aiokcm.io/run-seconds": "60"}, "Never")
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "hourly", "namespace": NS},
        "spec": {
            "schedule": "0 * * * *",
            "concurrencyPolicy": "Replace",
            "jobTemplate": {"spec": {"template": template}},
        },
    }


def long_job(name: str) -> dict[str, Any]:
    """A suspended Job of two 60 s pods at a time."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "suspend": True,
            "parallelism": 2,
            "completions": 4,
            "template": pod_template({}, {"kubesim.aiokcm.io/run-seconds": "60"}, "Never"),
        },
    }


def pod(name: str, labels: dict[str, str]) -> dict[str, Any]:
    """A pod of nobody's, running 60 s."""
    template = pod_template(labels, {"kubesim.aiokcm.io/run-seconds": "60"}, "Never")
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, **template["metadata"]},
        "spec": template["spec"],
    }


def pipeline(name: str = "build") -> dict[str, Any]:
    step = {
        "name": "only",
        "template": {
            "spec": {"template": pod_template({}, {"kubesim.aiokcm.io/run-seconds": "0.1"}, "Never")}
        },
    }
    return {
        "apiVersion": "workflows.aiokcm.io/v1",
        "kind": "Pipeline",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"steps": [step]},
    }


def metrics_reader_objects() -> list[tuple[str, dict[str, Any]]]:
    """(collection path, object): a ServiceAccount allowed `get /metrics`, and nothing else."""
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    name = "metrics-reader"
    role = {"metadata": {"name": name}, "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]}
    binding = {
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": NS}],
    }
    return [
        (f"/api/v1/namespaces/{NS}/serviceaccounts", {"metadata": {"name": name}}),
        (f"{rbac}/clusterroles", role),
        (f"{rbac}/clusterrolebindings", binding),
    ]
