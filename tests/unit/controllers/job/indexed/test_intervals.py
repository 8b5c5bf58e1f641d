"""Interval strings of completedIndexes/failedIndexes, pod indexes, pending index selection."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.job.indexed.intervals import (
    COMPLETION_INDEX_KEY,
    Intervals,
    completion_index,
    first_pending_indexes,
    pod_generate_name,
    split_for_removal,
    valid_index,
)


def pod(name: str, index: str | None = None, label: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "annotations": {}, "labels": {}}
    if index is not None:
        meta["annotations"][COMPLETION_INDEX_KEY] = index
    if label is not None:
        meta["labels"][COMPLETION_INDEX_KEY] = label
    return {"metadata": meta}


@pytest.mark.parametrize(
    ("indexes", "text"),
    [
        ([], ""),
        ([3], "3"),
        ([3, 4], "3,4"),
        ([3, 4, 5], "3-5"),
        ([1, 3, 4, 5, 7], "1,3-5,7"),
        ([7, 1, 5, 3, 4, 4], "1,3-5,7"),
        ([0, 1, 2, 3, 9, 10], "0-3,9,10"),
    ],
)
def test_format(indexes: list[int], text: str) -> None:
    assert str(Intervals.of(indexes)) == text


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("1,3-5,7", None, [1, 3, 4, 5, 7]),
        ("3,4", None, [3, 4]),
        ("5-3,x,2", None, [2]),  # malformed parts are skipped
        ("0-10", 4, [0, 1, 2, 3]),  # clipped to completions
        ("7,8", 5, []),
        ("1-3,2-6", None, [1, 2, 3, 4, 5, 6]),  # overlapping merged
        (None, None, []),
    ],
)
def test_parse(text: str | None, limit: int | None, expected: list[int]) -> None:
    parsed = Intervals.parse(text, limit)
    assert list(parsed.indexes()) == expected
    assert parsed.total() == len(expected)


def test_merge_has_and_round_trip() -> None:
    a = Intervals.parse("0-2,8")
    b = Intervals.of([3, 7, 20])
    merged = a.merge(b)
    assert str(merged) == "0-3,7,8,20"
    assert merged.has(3) and merged.has(20) and not merged.has(5) and not merged.has(21)
    assert Intervals.parse(str(merged)) == merged


def test_completion_index_annotation_then_label() -> None:
    assert completion_index(pod("a", index="4")) == 4
    assert completion_index(pod("a", label="5")) == 5
    assert completion_index(pod("a", index="2", label="5")) == 2
    for bad in ("", "-1", "x", "01", "1.5"):
        assert completion_index(pod("a", index=bad)) is None
    assert completion_index(pod("a")) is None
    assert valid_index(pod("a", index="3"), 3) is None
    assert valid_index(pod("a", index="2"), 3) == 2


def test_first_pending_indexes_fills_gaps_in_order() -> None:
    non_pending = Intervals.parse("0,2-4,7")
    assert first_pending_indexes(non_pending, 3, 10) == [1, 5, 6]
    assert first_pending_indexes(non_pending, 10, 9) == [1, 5, 6, 8]
    assert first_pending_indexes(Intervals(), 2, 5) == [0, 1]
    assert first_pending_indexes(non_pending, 0, 10) == []
    assert first_pending_indexes(Intervals.parse("0-4"), 3, 5) == []


def test_split_for_removal_keeps_best_of_duplicates() -> None:
    pods = [pod("a0", "0"), pod("b0", "0"), pod("c1", "1"), pod("none"), pod("far", "9"), pod("bad", "x")]

    def by_name(group: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return sorted(group, key=lambda p: p["metadata"]["name"])  # stand-in ranking: "b0" outranks "a0"

    remove, keep = split_for_removal(pods, 3, by_name)
    assert sorted(p["metadata"]["name"] for p in remove) == ["a0", "bad", "far", "none"]
    assert [p["metadata"]["name"] for p in keep] == ["b0", "c1"]


def test_generate_name_truncation() -> None:
    assert pod_generate_name("job", 3) == "job-3-"
    long = "j" * 70
    name = pod_generate_name(long, 12)
    assert len(name) == 58 and name.endswith("-12-")
