"""How many pods a Job wants, which pods go first, and the shape of the pods it creates."""

from __future__ import annotations

from typing import Any

from controllers.job.manage import pods_for_removal, want_active
from controllers.job.podcontrol import build_pod, error_text, is_namespace_terminating
from manager import ApiError, Invalid

INDEX = "batch.kubernetes.io/job-completion-index"


def job(**spec: Any) -> dict[str, Any]:
    template = {
        "metadata": {"labels": {"batch.kubernetes.io/job-name": "j"}, "annotations": {"a": "b"}},
        "spec": {
            "restartPolicy": "Never",
            "initContainers": [{"name": "init", "image": "x"}],
            "containers": [{"name": "main", "image": "x", "env": [{"name": "KEEP", "value": "1"}]}],
        },
    }
    return {
        "metadata": {"name": "j", "namespace": "ns", "uid": "u-1"},
        "spec": {"template": template, **spec},
    }


def pod(name: str, *, node: str = "", phase: str = "Pending", index: int | None = None) -> dict[str, Any]:
    annotations = {} if index is None else {INDEX: str(index)}
    return {
        "metadata": {"name": name, "annotations": annotations, "creationTimestamp": "2027-01-01T00:00:00Z"},
        "spec": {"nodeName": node} if node else {},
        "status": {"phase": phase},
    }


def test_want_active() -> None:
    assert want_active(job(parallelism=3, completions=10), active=0, succeeded=0) == 3
    assert want_active(job(parallelism=3, completions=10), active=3, succeeded=8) == 2
    assert want_active(job(parallelism=3, completions=10), active=0, succeeded=12) == 0
    # work queue (no completions): parallelism until the first success, then only what runs
    assert want_active(job(parallelism=4), active=0, succeeded=0) == 4
    assert want_active(job(parallelism=4), active=2, succeeded=1) == 2


def test_pods_for_removal_activepods_order() -> None:
    pods = [pod("running", node="n1", phase="Running"), pod("pending-bound", node="n1"), pod("unbound")]
    assert [p["metadata"]["name"] for p in pods_for_removal(job(), pods, 2)] == ["unbound", "pending-bound"]
    assert pods_for_removal(job(), pods, 0) == []


def test_pods_for_removal_indexed_duplicates_first() -> None:
    j = job(completionMode="Indexed", completions=2)
    pods = [pod("a0", node="n", phase="Running", index=0), pod("b0", index=0), pod("c5", node="n", index=5)]
    removed = [p["metadata"]["name"] for p in pods_for_removal(j, pods, 0)]
    assert sorted(removed) == ["b0", "c5"]  # even when nothing has to go for parallelism


def test_build_pod_non_indexed() -> None:
    p = build_pod(job(), None, None)
    meta = p["metadata"]
    assert meta["generateName"] == "j-" and meta["namespace"] == "ns"
    assert meta["finalizers"] == ["batch.kubernetes.io/job-tracking"]
    assert meta["ownerReferences"] == [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "u-1", "controller": True,
         "blockOwnerDeletion": True}
    ]  # fmt: skip
    assert meta["annotations"] == {"a": "b"} and "hostname" not in p["spec"]
    assert p["spec"]["containers"][0]["env"] == [{"name": "KEEP", "value": "1"}]


def test_build_pod_indexed_with_failure_counts() -> None:
    j = job(completionMode="Indexed", completions=5, backoffLimitPerIndex=2)
    p = build_pod(j, 3, (1, 2))
    meta = p["metadata"]
    assert meta["generateName"] == "j-3-" and p["spec"]["hostname"] == "j-3"
    assert meta["annotations"][INDEX] == "3" and meta["labels"][INDEX] == "3"
    assert meta["annotations"]["batch.kubernetes.io/job-index-failure-count"] == "1"
    assert meta["annotations"]["batch.kubernetes.io/job-index-ignored-failure-count"] == "2"
    env = {
        "name": "JOB_COMPLETION_INDEX",
        "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{INDEX}']"}},
    }
    assert p["spec"]["containers"][0]["env"][-1] == env and p["spec"]["initContainers"][0]["env"] == [env]
    first = build_pod(j, 0, (0, 0))["metadata"]["annotations"]
    assert first["batch.kubernetes.io/job-index-failure-count"] == "0"
    assert "batch.kubernetes.io/job-index-ignored-failure-count" not in first
    # the template is never modified
    assert j["spec"]["template"]["spec"]["containers"][0]["env"] == [{"name": "KEEP", "value": "1"}]


def test_error_text_and_namespace_terminating() -> None:
    err = Invalid(422, "Invalid", 'Pod "x" is invalid: bad')
    assert error_text(err) == 'Pod "x" is invalid: bad'
    terminating = ApiError(
        403, "Forbidden", "ns is terminating", {"details": {"causes": [{"reason": "NamespaceTerminating"}]}}
    )
    assert is_namespace_terminating(terminating) and not is_namespace_terminating(err)
