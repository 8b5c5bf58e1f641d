"""The per-request fast paths (compiled schema nodes, per-value memos) answer exactly as the slow paths do,
also the second time a value is seen, and never share mutable state between objects."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubesim.admission import defaults
from kubesim.merge.apply import record_update
from kubesim.schema import schemas
from kubesim.validation import objects as validation

POD = ("", "v1", "Pod")
JOB = ("batch", "v1", "Job")
SERVICE = ("", "v1", "Service")
WIDGET = ("example.com", "v1", "Widget")


def _pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "a"}, "finalizers": ["x/y"]},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "busybox",
                    "ports": [{"containerPort": 80}, {"containerPort": 53, "protocol": "UDP"}],
                    "env": [{"name": "A", "value": "1"}],
                    "resources": {"limits": {"cpu": "1"}},
                },
                {"image": "no-name"},
            ],
            "volumes": [{"name": "v"}],
            "nodeSelector": {"disk": "ssd"},
        },
    }


def _objects() -> list[tuple[tuple[str, str, str], dict[str, Any]]]:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "default"},
        "spec": {
            "completions": 2,
            "template": {"spec": {"containers": [{"name": "c", "image": "i"}], "restartPolicy": "Never"}},
        },
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s", "namespace": "default"},
        "spec": {"ports": [{"port": 80}], "selector": {"a": "b"}, "clusterIPs": ["10.0.0.1"]},
    }
    widget = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {"tags": ["a", "b"], "items": [{"id": "1", "v": {"q": 1}}], "free": {"x": {"y": 1}}},
    }
    return [(POD, _pod("p")), (JOB, job), (SERVICE, service), (WIDGET, widget)]


@pytest.fixture
def widget_schema() -> Any:
    schemas.register_crd_schema(
        WIDGET,
        {
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "tags": {
                            "type": "array",
                            "x-kubernetes-list-type": "set",
                            "items": {"type": "string"},
                        },
                        "items": {
                            "type": "array",
                            "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["id"],
                            "items": {
                                "type": "object",
                                "properties": {"id": {"type": "string"}, "v": {"type": "object"}},
                            },
                        },
                        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                    },
                }
            },
        },
    )
    yield
    schemas.unregister_crd_schema(WIDGET)


@pytest.mark.usefixtures("widget_schema")
def test_create_fields_match_the_general_update_computation_also_when_remembered() -> None:
    for gvk, obj in _objects():
        for _ in range(2):  # the second time the sections come from the memo
            fast = copy.deepcopy(obj)
            record_update(None, fast, "m", gvk, now="T")
            slow = copy.deepcopy(obj)
            record_update({}, slow, "m", gvk, now="T")  # an empty old object: the compare-based path
            assert fast["metadata"]["managedFields"] == slow["metadata"]["managedFields"], gvk


def test_remembered_create_fields_are_not_shared_through_metadata() -> None:
    first, second = _pod("a"), _pod("b")
    second["metadata"]["labels"] = {"other": "x"}
    record_update(None, first, "m", POD, now="T")
    record_update(None, second, "m", POD, now="T")
    fields = [o["metadata"]["managedFields"][0]["fieldsV1"]["f:metadata"] for o in (first, second)]
    assert fields[0]["f:labels"] == {".": {}, "f:app": {}}
    assert fields[1]["f:labels"] == {".": {}, "f:other": {}}


def test_pod_defaults_are_remembered_per_spec_but_never_shared() -> None:
    first, second = _pod("a"), _pod("b")
    defaults.apply_defaults("pods", first)
    defaults.apply_defaults("pods", second)
    assert first["spec"] == second["spec"]
    assert first["spec"] is not second["spec"]
    assert first["status"] == second["status"] == {"phase": "Pending", "qosClass": "Burstable"}
    first["spec"]["containers"][0]["image"] = "changed"
    third = _pod("c")
    defaults.apply_defaults("pods", third)
    assert third["spec"]["containers"][0]["image"] == "busybox"
    assert third["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "1"}


def test_unknown_fields_and_pod_validation_are_the_same_when_remembered() -> None:
    pod = _pod("p")
    pod["spec"]["bogus"] = 1
    pod["spec"]["containers"][0]["nope"] = {}
    pod["spec"]["containers"][1]["name"] = "Bad_Name"
    expected = [".spec.containers[0].nope", ".spec.bogus"]
    defaults.apply_defaults("pods", pod)
    seen = []
    for _ in range(2):
        assert validation.unknown_fields(POD, pod) == expected
        causes = validation.validate("pods", pod, None)
        seen.append(copy.deepcopy(causes))
        causes.append({"field": "caller's own"})  # a caller extending its list must not touch the memo
    assert seen[0] == seen[1]
    assert "spec.containers[1].name" in [c["field"] for c in seen[0]]


def test_value_memo_pauses_a_key_that_never_hits_and_tries_it_again() -> None:
    """Unique values (each custom resource's spec) stop being keyed after a trial of misses; the memo takes
    them up again after a pause, and a key that hits keeps being memoised throughout."""
    from kubesim.schema import nodes

    memo, owner, computed = nodes.ValueMemo(), object(), []

    def compute(i: int) -> int:
        computed.append(i)
        return i

    trial, pause = nodes._TRIAL, nodes._PAUSE
    keys = [memo.lookup(owner, "unique", {"n": i})[0] for i in range(trial + pause + 1)]
    assert all(k is not None for k in keys[:trial])
    assert all(k is None for k in keys[trial : trial + pause])  # paused: never keyed
    assert keys[trial + pause] is not None  # tried again
    other = object()
    for _ in range(trial + pause + 1):  # the same value over and over: a hit every time, never paused
        assert memo.get(other, "same", {"n": 1}, lambda: compute(1)) == 1
    assert computed == [1]
