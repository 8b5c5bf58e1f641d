"""Pod predicates, owner references, pods from templates, selectors and times."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.common.podutil import (
    InvalidSelectorError,
    NoLabelsError,
    Selector,
    is_active,
    is_available,
    is_ready,
    is_terminating,
    is_valid_name_prefix,
    max_container_restarts,
    new_controller_ref,
    parse_time,
    pod_from_template,
    pods_prefix,
    ready_since,
)
from manager import (
    CONTROLLER_UID_INDEX,
    controller_owner,
    controller_uid_index,
    format_time,
    object_key,
    orphan_index_key,
)


def test_parse_and_format_time() -> None:
    assert parse_time("2026-01-02T03:04:05Z") == 1767323045.0
    assert parse_time("2026-01-02T03:04:05.250000Z") == 1767323045.25
    assert parse_time("2026-01-02T05:04:05+02:00") == 1767323045.0
    assert parse_time("") is None
    assert parse_time(None) is None
    assert format_time(1767323045.9) == "2026-01-02T03:04:05Z"


@pytest.mark.parametrize(
    ("phase", "deleting", "active"),
    [
        ("Pending", False, True),
        ("Running", False, True),
        ("Unknown", False, True),
        ("", False, True),
        ("Succeeded", False, False),
        ("Failed", False, False),
        ("Running", True, False),
    ],
)
def test_is_active(phase: str, deleting: bool, active: bool) -> None:
    pod: dict[str, Any] = {"metadata": {}, "status": {"phase": phase}}
    if deleting:
        pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert is_active(pod) is active
    assert is_terminating(pod) is deleting


def ready_pod(status: str, since: str | None = "2026-01-01T00:00:00Z") -> dict[str, Any]:
    cond: dict[str, Any] = {"type": "Ready", "status": status}
    if since:
        cond["lastTransitionTime"] = since
    return {"status": {"conditions": [{"type": "PodScheduled", "status": "True"}, cond]}}


def test_ready_and_ready_since() -> None:
    assert is_ready(ready_pod("True"))
    assert not is_ready(ready_pod("False"))
    assert not is_ready({"status": {}})
    assert ready_since(ready_pod("True")) == parse_time("2026-01-01T00:00:00Z")
    assert ready_since(ready_pod("False")) is None
    assert ready_since(ready_pod("True", since=None)) is None


def test_available_is_strictly_after_min_ready_seconds() -> None:
    since = parse_time("2026-01-01T00:00:00Z")
    assert since is not None
    pod = ready_pod("True")
    assert is_available(pod, 0, since)
    assert not is_available(pod, 10, since + 10)
    assert is_available(pod, 10, since + 10.001)
    assert not is_available(ready_pod("False"), 0, since + 100)
    assert not is_available(ready_pod("True", since=None), 10, since + 100)


def test_max_container_restarts_separates_sidecars() -> None:
    pod = {
        "spec": {"initContainers": [{"name": "init"}, {"name": "side", "restartPolicy": "Always"}]},
        "status": {
            "containerStatuses": [{"name": "a", "restartCount": 2}, {"name": "b", "restartCount": 5}],
            "initContainerStatuses": [
                {"name": "init", "restartCount": 9},
                {"name": "side", "restartCount": 3},
            ],
        },
    }
    assert max_container_restarts(pod) == (5, 3)
    assert max_container_restarts({}) == (0, 0)


def test_controller_refs_and_index() -> None:
    owner = {"metadata": {"name": "web", "namespace": "ns", "uid": "u-1"}}
    ref = new_controller_ref(owner, "apps/v1", "ReplicaSet")
    assert ref == {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": "web",
        "uid": "u-1",
        "controller": True,
        "blockOwnerDeletion": True,
    }
    other = {"apiVersion": "v1", "kind": "X", "name": "x", "uid": "u-2"}
    owned = {"metadata": {"namespace": "ns", "name": "p", "ownerReferences": [other, ref]}}
    orphan = {"metadata": {"namespace": "ns", "name": "q", "ownerReferences": [other]}}
    assert controller_owner(owned) == ref
    assert controller_owner(orphan) is None
    assert controller_uid_index(owned) == ["u-1"]
    assert controller_uid_index(orphan) == [orphan_index_key("ns")]
    assert orphan_index_key("ns") != orphan_index_key("other")
    assert object_key(owned) == "ns/p"
    assert object_key({"metadata": {"name": "node"}}) == "node"


@pytest.mark.parametrize(
    ("prefix", "valid"),
    [
        ("web-", True),
        ("a-", True),
        ("web.v1-", True),
        ("Web-", False),
        ("web_", False),
        ("-", False),
        ("x" * 252 + "-", True),
        ("x" * 254 + "-", False),
    ],
)
def test_name_prefix_validity(prefix: str, valid: bool) -> None:
    assert is_valid_name_prefix(prefix) is valid


def test_pods_prefix_falls_back_to_bare_name() -> None:
    assert pods_prefix("web") == "web-"
    assert pods_prefix("Bad_Name") == "Bad_Name"


def test_pod_from_template_copies_metadata_and_spec() -> None:
    template: dict[str, Any] = {
        "metadata": {
            "labels": {"app": "web"},
            "annotations": {"a": "b"},
            "finalizers": ["f1"],
            "name": "ignored",
        },
        "spec": {"containers": [{"name": "c", "image": "nginx", "args": ["x"]}]},
    }
    ref = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "u", "controller": True}
    pod = pod_from_template(template, "web", ref, extra_finalizers=["f2", "f1"])
    assert pod["metadata"] == {
        "generateName": "web-",
        "labels": {"app": "web"},
        "annotations": {"a": "b"},
        "finalizers": ["f1", "f2"],
        "ownerReferences": [ref],
    }
    assert pod["spec"] == template["spec"]
    pod["spec"]["containers"][0]["args"].append("y")
    pod["metadata"]["labels"]["extra"] = "1"
    assert template["spec"]["containers"][0]["args"] == ["x"], "spec must be a deep copy"
    assert template["metadata"]["labels"] == {"app": "web"}


def test_pod_from_template_without_labels_is_refused() -> None:
    with pytest.raises(NoLabelsError, match="unable to create pods, no labels"):
        pod_from_template({"metadata": {}, "spec": {}}, "web", None)


SELECTOR_CASES: list[tuple[dict[str, Any] | None, dict[str, str], bool]] = [
    (None, {"a": "1"}, False),
    ({}, {"a": "1"}, True),
    ({"matchLabels": {"a": "1"}}, {"a": "1", "b": "2"}, True),
    ({"matchLabels": {"a": "1"}}, {"a": "2"}, False),
    ({"matchLabels": {"a": "1"}}, {}, False),
    ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1", "2"]}]}, {"a": "2"}, True),
    ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1"]}]}, {}, False),
    ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, {"a": "3"}, True),
    ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, {}, True),
    ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, {"a": "1"}, False),
    ({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {"a": ""}, True),
    ({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {"b": "1"}, False),
    ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {"b": "1"}, True),
    ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {"a": "1"}, False),
    (
        {"matchLabels": {"a": "1"}, "matchExpressions": [{"key": "b", "operator": "Exists"}]},
        {"a": "1"},
        False,
    ),
]


@pytest.mark.parametrize(("spec", "labels", "matches"), SELECTOR_CASES)
def test_selector_matching(spec: dict[str, Any] | None, labels: dict[str, str], matches: bool) -> None:
    assert Selector.from_label_selector(spec).matches(labels) is matches


@pytest.mark.parametrize(
    "expr",
    [
        {"key": "a", "operator": "In", "values": []},
        {"key": "a", "operator": "NotIn"},
        {"key": "a", "operator": "Exists", "values": ["x"]},
        {"key": "a", "operator": "Equals", "values": ["x"]},
    ],
)
def test_invalid_selectors(expr: dict[str, Any]) -> None:
    with pytest.raises(InvalidSelectorError):
        Selector.from_label_selector({"matchExpressions": [expr]})


def test_selector_empty_and_label_set() -> None:
    assert Selector.from_label_selector({}).empty
    assert not Selector.from_label_selector(None).empty
    assert not Selector.from_label_selector({"matchLabels": {"a": "1"}}).empty
    template_labels = Selector.from_set({"app": "web", "tier": "fe"})
    assert template_labels.matches({"app": "web", "tier": "fe", "x": "y"})
    assert not template_labels.matches({"app": "web"})


def test_ensure_indexer_shares_one_index_per_name() -> None:
    from controllers.common.podutil import ensure_indexer
    from manager.informers.store import Indexer

    def another_index(obj: dict[str, Any]) -> list[str]:
        return []

    indexer = Indexer()
    ref = {"uid": "u", "controller": True}
    owned = {"metadata": {"namespace": "ns", "name": "p", "ownerReferences": [ref]}}
    indexer.upsert("ns/p", owned)
    ensure_indexer(indexer, CONTROLLER_UID_INDEX, controller_uid_index)
    ensure_indexer(indexer, CONTROLLER_UID_INDEX, controller_uid_index)  # a second controller asks
    assert indexer.by_index(CONTROLLER_UID_INDEX, "u") == [owned]
    with pytest.raises(ValueError, match="another function"):
        ensure_indexer(indexer, CONTROLLER_UID_INDEX, another_index)
