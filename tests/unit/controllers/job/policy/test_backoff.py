"""Pod recreation backoff: real constants, doubling, cap, reset on success, finish-time rules, per index."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.job.policy.backoff import (
    DEFAULT_POD_FAILURE_BACKOFF,
    INDEX_FAILURE_COUNT_KEY,
    INDEX_IGNORED_FAILURE_COUNT_KEY,
    MAX_POD_FAILURE_BACKOFF,
    BackoffStore,
    backoff_delay,
    finish_time,
)
from manager import format_time

T0 = 1_800_000_000.0


def finished(
    at: float, *, phase: str = "Failed", annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "metadata": {"creationTimestamp": format_time(at - 100), "annotations": annotations or {}},
        "status": {
            "phase": phase,
            "containerStatuses": [{"name": "main", "state": {"terminated": {"finishedAt": format_time(at)}}}],
        },
    }


def test_real_constants() -> None:
    assert DEFAULT_POD_FAILURE_BACKOFF == 10.0
    assert MAX_POD_FAILURE_BACKOFF == 600.0  # 10 minutes since v1.28 (was 6 before)


@pytest.mark.parametrize(
    ("failures", "delay"), [(0, 0), (1, 10), (2, 20), (3, 40), (6, 320), (7, 600), (40, 600)]
)
def test_delay_doubles_and_caps(failures: int, delay: float) -> None:
    assert backoff_delay(failures, DEFAULT_POD_FAILURE_BACKOFF, MAX_POD_FAILURE_BACKOFF) == delay


def test_remaining_time_counts_from_last_failure() -> None:
    now = [T0 + 5]
    store = BackoffStore(clock=lambda: now[0])
    record = store.new_record("ns/j", [], [finished(T0)])
    assert record.failures_after_last_success == 1
    assert store.remaining(record) == pytest.approx(5)
    now[0] = T0 + 11
    assert store.remaining(record) == 0
    store.update(record)
    record2 = store.new_record("ns/j", [], [finished(T0 + 11)])
    assert record2.failures_after_last_success == 2
    assert store.remaining(record2) == pytest.approx(20)


def test_success_after_failures_resets_but_later_failures_count() -> None:
    store = BackoffStore(clock=lambda: T0 + 100)
    store.update(store.new_record("k", [], [finished(T0), finished(T0 + 1)]))
    assert store.get("k").failures_after_last_success == 2
    reset = store.new_record("k", [finished(T0 + 50, phase="Succeeded")], [])
    assert reset.failures_after_last_success == 0 and reset.last_failure_time is None
    mixed = store.new_record(
        "k", [finished(T0 + 50, phase="Succeeded")], [finished(T0 + 40), finished(T0 + 60), finished(T0 + 70)]
    )
    assert mixed.failures_after_last_success == 2
    assert mixed.last_failure_time == T0 + 70
    assert store.new_record("k", [], []) == store.get("k")


def test_finish_time_fallbacks() -> None:
    pod = finished(T0)
    assert finish_time(pod) == T0
    running: dict[str, Any] = {
        "metadata": {"creationTimestamp": format_time(T0 - 30)},
        "status": {
            "containerStatuses": [{"name": "a", "state": {"running": {}}}],
            "conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": format_time(T0 - 5)}],
        },
    }
    assert finish_time(running) == T0 - 5
    running["status"]["conditions"] = []
    running["metadata"]["deletionTimestamp"] = format_time(T0)
    running["metadata"]["deletionGracePeriodSeconds"] = 30
    assert finish_time(running) == T0 - 30
    del running["metadata"]["deletionTimestamp"]
    assert finish_time(running) == T0 - 30  # creation time


def test_per_index_backoff_uses_annotations() -> None:
    store = BackoffStore(clock=lambda: T0 + 1, base=10, cap=600)
    first = finished(T0, annotations={INDEX_FAILURE_COUNT_KEY: "0"})
    assert store.remaining_for_index(first) == pytest.approx(9)
    third = finished(T0, annotations={INDEX_FAILURE_COUNT_KEY: "1", INDEX_IGNORED_FAILURE_COUNT_KEY: "1"})
    assert store.remaining_for_index(third) == pytest.approx(39)
    assert store.remaining_for_index(None) == 0
