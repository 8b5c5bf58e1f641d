"""What the Job controller sends: empty omitempty status fields left out, as upstream's Go types do."""

from __future__ import annotations

from typing import Any

from controllers.job.wire import as_serialised


def job(status: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "status": status}


def test_empty_fields_are_left_out_and_the_caller_keeps_its_copy() -> None:
    status = {
        "active": 0,
        "succeeded": 1,
        "failed": 0,
        "ready": 0,
        "terminating": 0,
        "completedIndexes": "",
        "conditions": [],
        "uncountedTerminatedPods": {"succeeded": [], "failed": []},
    }
    original = job(dict(status))
    sent = as_serialised(original)
    assert sent["status"] == {"succeeded": 1, "ready": 0, "terminating": 0, "uncountedTerminatedPods": {}}
    assert original["status"] == status


def test_non_empty_lists_stay() -> None:
    sent = as_serialised(job({"active": 2, "uncountedTerminatedPods": {"succeeded": ["a"], "failed": []}}))
    assert sent["status"] == {"active": 2, "uncountedTerminatedPods": {"succeeded": ["a"]}}


def test_nothing_to_leave_out_returns_the_same_object() -> None:
    full = job({"active": 1, "uncountedTerminatedPods": {"succeeded": ["a"], "failed": ["b"]}})
    assert as_serialised(full) is full
    zeros = job({"ready": 0, "terminating": 0})
    assert as_serialised(zeros) is zeros  # pointers upstream: their zeros are kept
    no_status = {"metadata": {"name": "j"}}
    assert as_serialised(no_status) is no_status
