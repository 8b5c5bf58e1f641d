"""Conditions follow apimachinery's meta.SetStatusCondition cases (status drives lastTransitionTime)."""

from __future__ import annotations

from typing import Any

import pytest

from manager.apimachinery.conditions import (
    find_status_condition,
    is_status_condition_false,
    is_status_condition_present_and_equal,
    is_status_condition_true,
    remove_status_condition,
    set_status_condition,
)

OLD = "2020-01-01T00:00:00Z"
NOW = 1_700_000_000.0  # 2023-11-14T22:13:20Z
NOW_TEXT = "2023-11-14T22:13:20Z"


def cond(type: str, status: str, **extra: Any) -> dict[str, Any]:
    return {"type": type, "status": status, **extra}


def test_a_new_condition_is_appended_with_now_as_its_transition_time() -> None:
    conditions: list[dict[str, Any]] = [cond("First", "True", lastTransitionTime=OLD)]
    assert set_status_condition(conditions, cond("Second", "False", reason="R", message="m"), NOW)
    assert conditions == [
        cond("First", "True", lastTransitionTime=OLD),
        cond("Second", "False", reason="R", message="m", lastTransitionTime=NOW_TEXT),
    ]


def test_a_new_condition_keeps_a_supplied_transition_time() -> None:
    conditions: list[dict[str, Any]] = []
    assert set_status_condition(conditions, cond("Ready", "True", lastTransitionTime=OLD), NOW)
    assert conditions == [cond("Ready", "True", lastTransitionTime=OLD)]


def test_same_status_updates_reason_message_generation_but_not_the_transition_time() -> None:
    conditions = [
        cond("Ready", "True", reason="Old", message="old", observedGeneration=1, lastTransitionTime=OLD)
    ]
    changed = set_status_condition(
        conditions, cond("Ready", "True", reason="New", message="new", observedGeneration=2), NOW
    )
    assert changed
    assert conditions == [
        cond("Ready", "True", reason="New", message="new", observedGeneration=2, lastTransitionTime=OLD)
    ]


def test_a_status_change_moves_the_transition_time_to_now_or_the_supplied_one() -> None:
    conditions = [cond("Ready", "True", reason="A", lastTransitionTime=OLD)]
    assert set_status_condition(conditions, cond("Ready", "False", reason="A"), NOW)
    assert conditions == [cond("Ready", "False", reason="A", lastTransitionTime=NOW_TEXT)]
    supplied = "2024-05-05T05:05:05Z"
    assert set_status_condition(
        conditions, cond("Ready", "True", reason="A", lastTransitionTime=supplied), NOW
    )
    assert conditions[0]["lastTransitionTime"] == supplied


def test_setting_an_identical_condition_changes_nothing() -> None:
    conditions = [
        cond("Ready", "True", reason="A", message="m", observedGeneration=3, lastTransitionTime=OLD)
    ]
    before = [dict(c) for c in conditions]
    assert not set_status_condition(
        conditions, cond("Ready", "True", reason="A", message="m", observedGeneration=3), NOW
    )
    assert conditions == before


def test_the_condition_is_updated_in_place_among_others() -> None:
    conditions = [cond("A", "True", lastTransitionTime=OLD), cond("B", "True", lastTransitionTime=OLD)]
    set_status_condition(conditions, cond("A", "False"), NOW)
    assert [c["type"] for c in conditions] == ["A", "B"]
    assert conditions[1] == cond("B", "True", lastTransitionTime=OLD)


@pytest.mark.parametrize(
    ("conditions", "type", "removed", "left"),
    [
        ([], "A", False, []),
        ([cond("B", "True")], "A", False, ["B"]),
        ([cond("A", "True"), cond("B", "True")], "A", True, ["B"]),
    ],
)
def test_remove_status_condition(
    conditions: list[dict[str, Any]], type: str, removed: bool, left: list[str]
) -> None:
    assert remove_status_condition(conditions, type) is removed
    assert [c["type"] for c in conditions] == left


def test_find_status_condition() -> None:
    conditions = [cond("A", "True"), cond("B", "False")]
    assert find_status_condition(conditions, "B") is conditions[1]
    assert find_status_condition(conditions, "C") is None
    assert find_status_condition(None, "A") is None


@pytest.mark.parametrize(
    ("status", "true", "false", "equal_true"),
    [("True", True, False, True), ("False", False, True, False), ("Unknown", False, False, False)],
)
def test_status_predicates(status: str, true: bool, false: bool, equal_true: bool) -> None:
    conditions = [cond("Ready", status)]
    assert is_status_condition_true(conditions, "Ready") is true
    assert is_status_condition_false(conditions, "Ready") is false
    assert is_status_condition_present_and_equal(conditions, "Ready", "True") is equal_true
    assert is_status_condition_present_and_equal(conditions, "Ready", status)
    assert not is_status_condition_true(conditions, "Missing")
    assert not is_status_condition_false(conditions, "Missing")
    assert not is_status_condition_present_and_equal(None, "Ready", status)


def test_an_update_replaces_the_entry_and_leaves_shared_dicts_alone() -> None:
    shared = cond("Ready", "False", reason="A", lastTransitionTime=OLD)
    cached = [shared]
    working = list(cached)  # a shallow copy, as a reconcile makes of a cached object's conditions
    assert set_status_condition(working, cond("Ready", "True", reason="B"), NOW)
    assert shared == cond("Ready", "False", reason="A", lastTransitionTime=OLD)
    assert cached == [shared]
    assert working == [cond("Ready", "True", reason="B", lastTransitionTime=NOW_TEXT)]
