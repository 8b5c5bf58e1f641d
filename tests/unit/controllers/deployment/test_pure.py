"""Pure logic of the Deployment controller: hashing, fenceposts, proportional scaling, rolling plans,
annotations and conditions."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.deployment import annotations as ann
from controllers.deployment import conditions as cond
from controllers.deployment.hashing import compute_hash, equal_ignore_hash, fnv1a_32, safe_encode
from controllers.deployment.history import history_to_delete
from controllers.deployment.replicas import (
    FencepostError,
    active_or_latest,
    max_surge,
    max_unavailable,
    new_rs_new_replicas,
    proportional_sizes,
    resolve_fenceposts,
    scaled_value,
)
from controllers.deployment.rollback import rollback_to
from controllers.deployment.strategies import plan_cleanup_unhealthy, plan_scale_down_old, scale_down_budget

Obj = dict[str, Any]


def deploy(replicas: int = 10, surge: Any = "25%", unavailable: Any = "25%", **spec: Any) -> Obj:
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}}
    return {
        "metadata": {"name": "d", "generation": 1, "annotations": spec.pop("annotations", {})},
        "spec": {"replicas": replicas, "strategy": strategy, "progressDeadlineSeconds": 600, **spec},
        "status": spec.pop("status", {}),
    }


def rs(
    name: str,
    size: int,
    available: int | None = None,
    created: int = 0,
    annotations: dict[str, str] | None = None,
) -> Obj:
    return {
        "metadata": {
            "name": name,
            "uid": name,
            "creationTimestamp": f"2024-01-01T00:00:{created:02d}Z",
            "annotations": annotations or {},
        },
        "spec": {"replicas": size},
        "status": {"replicas": size, "availableReplicas": size if available is None else available},
    }


# ---------------------------------------------------------------------- hashing
def test_fnv1a_and_safe_encoding() -> None:
    assert fnv1a_32(b"") == 0x811C9DC5 and fnv1a_32(b"a") == 0xE40C292C
    assert safe_encode("0123456789") == "456789bcdf"  # upstream's digit table


def test_hash_ignores_empty_fields_and_changes_with_collision_count() -> None:
    t: Obj = {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    same: Obj = {
        "metadata": {"labels": {"app": "x"}, "annotations": {}},
        "spec": {**t["spec"], "volumes": []},
    }
    assert compute_hash(t, None) == compute_hash(same, None)
    assert compute_hash(t, None) != compute_hash(t, 1) != compute_hash(t, 2)
    assert all(c in "bcdfghjklmnpqrstvwxz2456789" for c in compute_hash(t, None))


def test_equal_ignore_hash() -> None:
    t = {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    hashed = {"metadata": {"labels": {"app": "x", "pod-template-hash": "abc"}}, "spec": t["spec"]}
    assert equal_ignore_hash(t, hashed)
    other = {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "j"}]}}
    assert not equal_ignore_hash(t, other)


# ---------------------------------------------------------------------- fenceposts
@pytest.mark.parametrize(
    ("replicas", "surge", "unavailable", "expected"),
    [
        (10, "25%", "25%", (3, 2)),  # surge rounds up, unavailable down
        (1, "25%", "25%", (1, 0)),
        (3, "0%", "10%", (0, 1)),  # both 0 → unavailable 1
        (10, 3, 2, (3, 2)),
        (4, 0, 10, (0, 4)),  # capped at replicas
        (0, "25%", "25%", (0, 0)),
    ],
)
def test_fenceposts(replicas: int, surge: Any, unavailable: Any, expected: tuple[int, int]) -> None:
    d = deploy(replicas, surge, unavailable)
    assert (max_surge(d), max_unavailable(d)) == expected


def test_fenceposts_recreate_and_bad_values() -> None:
    d = deploy(5)
    d["spec"]["strategy"] = {"type": "Recreate"}
    assert (max_surge(d), max_unavailable(d)) == (0, 0)
    with pytest.raises(FencepostError):
        resolve_fenceposts(deploy(5, "3"))
    assert scaled_value("150%", 10, True) == 15


def test_new_rs_new_replicas() -> None:
    d = deploy(10, 3, 2)
    old = rs("old", 10)
    assert new_rs_new_replicas(d, [old, rs("new", 0)], 0) == 3
    assert new_rs_new_replicas(d, [rs("old", 8), rs("new", 3)], 3) == 5
    # a ReplicaSet scaled down whose pods are not yet gone still counts
    shrinking = rs("old", 8)
    shrinking["status"]["replicas"] = 10
    assert new_rs_new_replicas(d, [shrinking, rs("new", 3)], 3) == 3


# ---------------------------------------------------------------------- proportional scaling
def test_proportional_resize_as_upstreams_e2e_example() -> None:
    d = deploy(30, 3, 2)
    old = rs("old", 8, created=1, annotations={ann.MAX_REPLICAS: "13"})
    new = rs("new", 5, created=2, annotations={ann.MAX_REPLICAS: "13"})
    sizes = {r["metadata"]["name"]: n for r, n in proportional_sizes(d, [old, new])}
    assert sizes == {"old": 20, "new": 13}


def test_proportional_scale_down_and_to_zero() -> None:
    old = rs("old", 20, created=1, annotations={ann.MAX_REPLICAS: "33"})
    new = rs("new", 13, created=2, annotations={ann.MAX_REPLICAS: "33"})
    sizes = [n for _, n in proportional_sizes(deploy(10, 3, 2), [old, new])]
    assert sum(sizes) == 13 and sizes == [8, 5]
    assert [n for _, n in proportional_sizes(deploy(0, 3, 2), [old, new])] == [0, 0]


def test_active_or_latest() -> None:
    a, b = rs("a", 0, created=1), rs("b", 0, created=2)
    assert active_or_latest(None, [a, b]) is b
    c = rs("c", 3, created=3)
    assert active_or_latest(None, [a, c]) is c
    assert active_or_latest(rs("n", 1), [c]) is None


# ---------------------------------------------------------------------- rolling plans
def test_rolling_scale_down_plans() -> None:
    d = deploy(10, 3, 2)
    old1 = rs("old1", 4, available=2, created=1)
    old2 = rs("old2", 6, created=2)
    new = rs("new", 3, available=0, created=3)
    budget = scale_down_budget(d, [old1, old2, new], new)
    assert budget == 13 - 8 - 3 == 2
    assert [(r["metadata"]["name"], n) for r, n in plan_cleanup_unhealthy([old2, old1], budget)] == [
        ("old1", 2)
    ]
    # 8 available beyond minAvailable 8 → nothing; with the new ones available, oldest first
    assert plan_scale_down_old(d, [old1, old2, new], [old1, old2]) == []
    ready_new = rs("new", 3, available=3, created=3)
    plan = plan_scale_down_old(d, [old1, old2, ready_new], [old2, old1])
    assert [(r["metadata"]["name"], n) for r, n in plan] == [("old1", 1)]


# ---------------------------------------------------------------------- annotations
def test_new_rs_annotations_copy_and_restamp() -> None:
    d = deploy(3, annotations={"team": "a", ann.LAST_APPLIED: "{}", ann.REVISION: "7", ann.ROLLBACK_TO: "1"})
    fresh: dict[str, str] = {}
    assert ann.set_new_rs_annotations(d, fresh, 1, False, 3, 1)
    assert fresh == {"team": "a", ann.REVISION: "1", ann.DESIRED_REPLICAS: "3", ann.MAX_REPLICAS: "4"}
    rolled_back = {ann.REVISION: "2", ann.REVISION_HISTORY: "1"}
    assert ann.set_new_rs_annotations(d, rolled_back, 5, True, 3, 1)
    assert rolled_back[ann.REVISION] == "5" and rolled_back[ann.REVISION_HISTORY] == "1,2"
    assert not ann.set_new_rs_annotations(d, rolled_back, 5, True, 3, 1)


def test_revisions() -> None:
    rss = [
        rs("a", 0, annotations={ann.REVISION: "3"}),
        rs("b", 0, annotations={ann.REVISION: "x"}),
        rs("c", 0, annotations={ann.REVISION: "9"}),
    ]
    assert ann.max_revision(rss) == 9 and ann.last_revision(rss) == 3
    assert rollback_to(deploy(annotations={ann.ROLLBACK_TO: "0"})) == 0
    assert rollback_to(deploy(annotations={ann.ROLLBACK_TO: "nope"})) is None


def test_history_to_delete() -> None:
    d = deploy(1, revisionHistoryLimit=1)
    old = [rs(f"r{i}", 0, created=i, annotations={ann.REVISION: str(i)}) for i in (3, 1, 2)]
    old[0]["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"  # not counted, not deleted
    assert [r["metadata"]["name"] for r in history_to_delete(d, old)] == ["r1"]
    busy = rs("r0", 1, created=0, annotations={ann.REVISION: "0"})
    # the two lowest revisions are due, but a ReplicaSet still running pods is skipped
    assert [r["metadata"]["name"] for r in history_to_delete(d, [busy, *old[1:]])] == ["r1"]


# ---------------------------------------------------------------------- conditions
def test_set_condition_keeps_transition_time_and_moves_to_the_end() -> None:
    status: Obj = {}
    cond.set_condition(status, cond.new_condition("Progressing", "True", "A", "m", 0))
    cond.set_condition(status, cond.new_condition("Available", "True", "B", "m", 0))
    cond.set_condition(status, cond.new_condition("Progressing", "True", "C", "m", 100))
    assert [c["type"] for c in status["conditions"]] == ["Available", "Progressing"]
    progressing = status["conditions"][1]
    assert progressing["reason"] == "C" and progressing["lastTransitionTime"] == "1970-01-01T00:00:00Z"
    assert progressing["lastUpdateTime"] == "1970-01-01T00:01:40Z"


def test_status_and_progress() -> None:
    d = deploy(3, 1, 0)
    new = rs("new", 3)
    status = cond.calculate_status(d, [new], new, 0)
    assert status["updatedReplicas"] == 3 and status["unavailableReplicas"] == 0
    assert status["conditions"][-1]["reason"] == "MinimumReplicasAvailable"
    cond.rollout_status(d, status, [new], new, 0)
    assert status["conditions"][-1]["message"] == 'ReplicaSet "new" has successfully progressed.'


def test_deadline_and_requeue() -> None:
    started = cond.new_condition(cond.PROGRESSING, "True", cond.RS_UPDATED, "m", 1000)
    d = deploy(
        3,
        1,
        0,
        progressDeadlineSeconds=10,
        status={"conditions": [started], "replicas": 3, "updatedReplicas": 3},
    )
    stuck = {"replicas": 3, "conditions": [started]}
    assert cond.stuck_requeue_delay(d, stuck, 1004) == 7.0  # 1000 + 10 - 1004, +1 s
    assert cond.stuck_requeue_delay(d, stuck, 1009.5) == 0.0
    assert not cond.deployment_timed_out(d, stuck, 1010) and cond.deployment_timed_out(d, stuck, 1011)
    new = rs("new", 3, available=0)
    status = cond.calculate_status(d, [new], new, 1011)
    cond.rollout_status(d, status, [new], new, 1011)
    progressing = cond.get_condition(status, cond.PROGRESSING)
    assert (
        progressing is not None
        and progressing["reason"] == cond.TIMED_OUT
        and progressing["status"] == "False"
    )


def test_paused_conditions() -> None:
    d = deploy(1, paused=True)
    assert cond.check_paused_conditions(d, 0)
    assert cond.get_condition(d["status"], cond.PROGRESSING)["reason"] == cond.PAUSED  # type: ignore[index]
    assert not cond.check_paused_conditions(d, 0)
    d["spec"]["paused"] = False
    assert cond.check_paused_conditions(d, 0)
    assert cond.get_condition(d["status"], cond.PROGRESSING)["message"] == "Deployment is resumed"  # type: ignore[index]


def test_write_memo_forgets_old_writes_of_objects_gone_since() -> None:
    from controllers.deployment.writememo import PENDING_CREATE_TTL, WriteMemo

    now = [0.0]
    memo = WriteMemo(clock=lambda: now[0])
    for i in range(100):
        memo.written({"metadata": {"uid": f"u{i}", "resourceVersion": str(i)}})
    now[0] = PENDING_CREATE_TTL + 1
    memo.written({"metadata": {"uid": "fresh", "resourceVersion": "200"}})
    assert len(memo) == 1  # the hundred old writes expired; only the new one is kept
