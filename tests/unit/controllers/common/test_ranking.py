"""Deletion orderings: one table row per ranking rule (first element of `expected` is deleted first)."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.common.ranking import (
    RankingCache,
    deletion_age_ratios,
    deletion_cost,
    log_bucket,
    rank_by_related_pods_on_same_node,
    sort_active_pods,
    sort_active_pods_with_ranks,
)
from manager import format_time

NOW = 1_800_000_000.0  # injectable clock


def pod(
    name: str,
    *,
    node: str = "n1",
    phase: str = "Running",
    ready_ago: float | None = 1000.0,
    created_ago: float | None = 5000.0,
    restarts: int = 0,
    sidecar_restarts: int = 0,
    cost: str | None = None,
    uid: str | None = None,
    deleting: bool = False,
    zero_ready_time: bool = False,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "ns", "uid": uid or f"uid-{name}"}
    if created_ago is not None:
        metadata["creationTimestamp"] = format_time(NOW - created_ago)
    if cost is not None:
        metadata["annotations"] = {"controller.kubernetes.io/pod-deletion-cost": cost}
    if deleting:
        metadata["deletionTimestamp"] = format_time(NOW)
    conditions = []
    if zero_ready_time:
        conditions.append({"type": "Ready", "status": "True"})
    elif ready_ago is not None:
        since = format_time(NOW - ready_ago)
        conditions.append({"type": "Ready", "status": "True", "lastTransitionTime": since})
    else:
        conditions.append({"type": "Ready", "status": "False"})
    spec: dict[str, Any] = {
        "containers": [{"name": "c"}],
        "initContainers": [{"name": "side", "restartPolicy": "Always"}],
    }
    if node:
        spec["nodeName"] = node
    return {
        "metadata": metadata,
        "spec": spec,
        "status": {
            "phase": phase,
            "conditions": conditions,
            "containerStatuses": [{"name": "c", "restartCount": restarts}],
            "initContainerStatuses": [{"name": "side", "restartCount": sidecar_restarts}],
        },
    }


def names(pods: list[dict[str, Any]]) -> list[str]:
    return [p["metadata"]["name"] for p in pods]


# (case, pods in input order, ranks, expected delete-first order)
RANKED_CASES: list[tuple[str, list[dict[str, Any]], list[int], list[str]]] = [
    ("unassigned before assigned", [pod("a"), pod("u", node="")], [0, 0], ["u", "a"]),
    (
        "Pending < Unknown < Running",
        [pod("r"), pod("k", phase="Unknown"), pod("p", phase="Pending")],
        [0, 0, 0],
        ["p", "k", "r"],
    ),
    ("not ready before ready", [pod("r"), pod("n", ready_ago=None)], [0, 0], ["n", "r"]),
    (
        "lower deletion cost first",
        [pod("hi", cost="100"), pod("none"), pod("neg", cost="-5")],
        [0, 0, 0],
        ["neg", "none", "hi"],
    ),
    (
        "invalid costs count as 0",
        [
            pod("plus", cost="+10", uid="u2", created_ago=40),
            pod("lead0", cost="008", uid="u3", created_ago=50),
            pod("one", cost="1", uid="u1"),
        ],
        [0, 0, 0],
        ["plus", "lead0", "one"],
    ),
    ("cost beats node rank", [pod("crowded", cost="1"), pod("alone")], [5, 1], ["alone", "crowded"]),
    ("more co-located first", [pod("one"), pod("three")], [1, 3], ["three", "one"]),
    (
        "ready more recently first (different log buckets)",
        [pod("old", ready_ago=1000), pod("new", ready_ago=10)],
        [0, 0],
        ["new", "old"],
    ),
    (
        "same ready bucket: lower UID first, restarts ignored",
        [pod("b", ready_ago=40, uid="uid-1", restarts=0), pod("a", ready_ago=50, uid="uid-2", restarts=9)],
        [0, 0],
        ["b", "a"],
    ),
    (
        "equal ready time: higher restarts first",
        [pod("calm", restarts=1), pod("crashy", restarts=7)],
        [0, 0],
        ["crashy", "calm"],
    ),
    (
        "equal restarts: higher sidecar restarts first",
        [pod("calm", sidecar_restarts=0), pod("side", sidecar_restarts=3)],
        [0, 0],
        ["side", "calm"],
    ),
    (
        "newer creation first (different buckets)",
        [pod("old", created_ago=100_000), pod("young", created_ago=100)],
        [0, 0],
        ["young", "old"],
    ),
    (
        "same creation bucket: lower UID first even if older",
        [pod("younger", created_ago=40, uid="uid-9"), pod("older", created_ago=50, uid="uid-1")],
        [0, 0],
        ["older", "younger"],
    ),
    (
        "zero creation time counts as newest",
        [pod("dated", created_ago=1), pod("zero", created_ago=None)],
        [0, 0],
        ["zero", "dated"],
    ),
    (
        "zero ready time counts as most recently ready",
        [pod("dated", ready_ago=1), pod("zero", zero_ready_time=True)],
        [0, 0],
        ["zero", "dated"],
    ),
]


@pytest.mark.parametrize(
    ("case", "pods", "ranks", "expected"), RANKED_CASES, ids=[c[0] for c in RANKED_CASES]
)
def test_active_pods_with_ranks(
    case: str, pods: list[dict[str, Any]], ranks: list[int], expected: list[str]
) -> None:
    assert names(sort_active_pods_with_ranks(pods, ranks, NOW)) == expected
    reversed_input = sort_active_pods_with_ranks(pods[::-1], ranks[::-1], NOW)
    assert names(reversed_input) == expected, "order must not depend on the input order"


@pytest.mark.parametrize(
    ("case", "pods", "ranks", "expected"), RANKED_CASES, ids=[c[0] for c in RANKED_CASES]
)
def test_active_pods_with_ranks_through_a_cache(
    case: str, pods: list[dict[str, Any]], ranks: list[int], expected: list[str]
) -> None:
    cache = RankingCache()
    for _ in range(2):  # cold, then every pod's facts remembered
        assert names(sort_active_pods_with_ranks(pods, ranks, NOW, cache)) == expected


def test_cache_follows_replaced_pod_dicts() -> None:
    # The informer replaces a changed pod's dict: the cache must not keep ranking it by its old facts.
    pods = [pod("a", ready_ago=100), pod("b", ready_ago=5000), pod("c", ready_ago=20000)]
    cache = RankingCache()
    assert names(sort_active_pods_with_ranks(pods, [0, 0, 0], NOW, cache)) == ["a", "b", "c"]
    not_ready = pod("c", ready_ago=None)
    pods = [pods[0], pods[1], not_ready]
    assert names(sort_active_pods_with_ranks(pods, [0, 0, 0], NOW, cache)) == ["c", "a", "b"]
    assert deletion_age_ratios(pods, 3, NOW, cache) == deletion_age_ratios(pods, 3, NOW)


def test_without_now_plain_time_order_is_used() -> None:
    # Same bucket, but without a clock the newer pod goes first regardless of UID.
    pods = [pod("younger", created_ago=40, uid="uid-9"), pod("older", created_ago=50, uid="uid-1")]
    assert names(sort_active_pods_with_ranks(pods, [0, 0], None)) == ["younger", "older"]


def test_ranks_length_must_match() -> None:
    with pytest.raises(ValueError, match="same length"):
        sort_active_pods_with_ranks([pod("a")], [], NOW)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, 0),
        ("", 0),
        ("0", 0),
        ("10", 10),
        ("-10", -10),
        ("+10", 0),
        ("008", 0),
        ("00", 0),
        ("-", 0),
        ("1_0", 0),
        ("1.5", 0),
        (" 5", 0),
        ("2147483647", 2147483647),
        ("2147483648", 0),
        ("-2147483648", -2147483648),
        ("-2147483649", 0),
    ],
)
def test_deletion_cost_parsing(value: str | None, expected: int) -> None:
    assert deletion_cost(pod("p", cost=value)) == expected


@pytest.mark.parametrize(
    ("seconds_ago", "bucket"),
    [(0.0, -1), (-5.0, -1), (1.0, 29), (2.0, 30), (60.0, 35), (3600.0, 41)],
)
def test_log_bucket_is_floor_log2_of_nanoseconds(seconds_ago: float, bucket: int) -> None:
    assert log_bucket(NOW - seconds_ago, NOW) == bucket


JOB_CASES: list[tuple[str, list[dict[str, Any]], list[str]]] = [
    ("unassigned first", [pod("a"), pod("u", node="")], ["u", "a"]),
    ("phase", [pod("r"), pod("k", phase="Unknown"), pod("p", phase="Pending")], ["p", "k", "r"]),
    ("not ready first", [pod("r"), pod("n", ready_ago=None)], ["n", "r"]),
    (
        "deletion cost ignored",
        [pod("cheap", cost="-100", ready_ago=1000), pod("new", ready_ago=10)],
        ["new", "cheap"],
    ),
    (
        "no buckets: ready more recently first, no UID tie-break",
        [pod("a", ready_ago=50, uid="uid-1"), pod("b", ready_ago=40, uid="uid-2")],
        ["b", "a"],
    ),
    ("restarts", [pod("calm", restarts=1), pod("crashy", restarts=7)], ["crashy", "calm"]),
    (
        "newer creation first",
        [pod("older", created_ago=50, uid="uid-1"), pod("younger", created_ago=40, uid="uid-9")],
        ["younger", "older"],
    ),
    ("zero creation newest", [pod("dated", created_ago=1), pod("zero", created_ago=None)], ["zero", "dated"]),
]


@pytest.mark.parametrize(("case", "pods", "expected"), JOB_CASES, ids=[c[0] for c in JOB_CASES])
def test_active_pods_job_order(case: str, pods: list[dict[str, Any]], expected: list[str]) -> None:
    assert names(sort_active_pods(pods)) == expected
    assert names(sort_active_pods(pods[::-1])) == expected


def test_rank_counts_active_related_pods_per_node() -> None:
    related = [
        pod("x1", node="n1"),
        pod("x2", node="n1"),
        pod("x3", node="n2"),
        pod("gone", node="n2", deleting=True),
        pod("done", node="n2", phase="Succeeded"),
        pod("pending", node=""),
    ]
    targets = [pod("t1", node="n1"), pod("t2", node="n2"), pod("t3", node="n3"), pod("t4", node="")]
    assert rank_by_related_pods_on_same_node(targets, related) == [2, 1, 0, 1]


def test_deletion_age_ratio_uses_youngest_ready_pod() -> None:
    pods = [pod("old", created_ago=400), pod("young", created_ago=100), pod("notready", ready_ago=None)]
    assert deletion_age_ratios(pods, 2, NOW) == [4.0, 1.0]
