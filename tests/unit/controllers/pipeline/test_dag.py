"""The Pipeline controller's pure logic: step-graph validation, cycle detection, ready steps, the model's
validator, job phases and the status it writes."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from controllers.pipeline import Pipeline
from controllers.pipeline.dag import (
    FAILED,
    PENDING,
    RUNNING,
    SUCCEEDED,
    duplicate_names,
    find_cycle,
    ready_steps,
    unknown_dependencies,
    validate,
)
from controllers.pipeline.status import job_phase, overall_phase, pipeline_status

DIAMOND = {"fetch": [], "build": ["fetch"], "test": ["fetch"], "publish": ["build", "test"]}


def test_ready_steps_follow_dependencies() -> None:
    assert ready_steps(DIAMOND, {}) == ["fetch"]
    assert ready_steps(DIAMOND, {"fetch": RUNNING}) == []
    assert ready_steps(DIAMOND, {"fetch": SUCCEEDED}) == ["build", "test"]
    assert ready_steps(DIAMOND, {"fetch": SUCCEEDED, "build": SUCCEEDED, "test": RUNNING}) == []
    phases = {"fetch": SUCCEEDED, "build": SUCCEEDED, "test": SUCCEEDED, "publish": PENDING}
    assert ready_steps(DIAMOND, phases) == ["publish"]
    assert ready_steps(DIAMOND, {**phases, "publish": SUCCEEDED}) == []


def test_nothing_is_ready_after_a_failure() -> None:
    assert ready_steps(DIAMOND, {"fetch": SUCCEEDED, "build": FAILED}) == []
    assert ready_steps({"a": [], "b": []}, {"a": FAILED}) == []  # not even an independent step


def test_find_cycle() -> None:
    assert find_cycle(DIAMOND) is None
    assert find_cycle({"a": ["a"]}) == ["a", "a"]
    assert find_cycle({"a": ["b"], "b": ["c"], "c": ["a"]}) == ["a", "b", "c", "a"]
    assert find_cycle({"x": [], "a": ["x", "b"], "b": ["a"]}) == ["a", "b", "a"]
    assert find_cycle({"a": ["ghost"]}) is None  # unknown names are another check's business
    chain = {f"s{i}": [f"s{i + 1}"] for i in range(5000)} | {"s5000": []}
    assert find_cycle(chain) is None  # iterative: no recursion limit


def test_validate_names_what_is_wrong() -> None:
    assert validate(DIAMOND) is None
    assert validate({"a": []}, ["a", "a"]) == "duplicate step name 'a'"
    assert duplicate_names(["a", "b", "a", "b", "a"]) == ["a", "b"]
    assert unknown_dependencies({"a": ["b", "c"], "b": []}) == [("a", "c")]
    assert validate({"a": ["c"], "b": []}) == "step 'a' depends on unknown step 'c'"
    assert validate({"a": ["b", "b"], "b": []}) == "step 'a' lists a dependency twice"
    assert validate({"a": ["b"], "b": ["a"]}) == "dependency cycle: a -> b -> a"


def pipeline(steps: list[dict[str, Any]], status: dict[str, Any] | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "workflows.aiokcm.io/v1",
        "kind": "Pipeline",
        "metadata": {"name": "p", "namespace": "default", "uid": "u1", "generation": 2},
        "spec": {"steps": steps},
    }
    if status is not None:
        obj["status"] = status
    return obj


def step(name: str, *deps: str) -> dict[str, Any]:
    return {"name": name, "dependsOn": list(deps), "template": {"spec": {"template": {}}}}


def test_the_model_rejects_cycles_unknown_and_duplicate_steps() -> None:
    valid = Pipeline.from_object(pipeline([step("a"), step("b", "a")]))
    assert valid.spec.graph() == {"a": [], "b": ["a"]}
    for steps, message in (
        ([step("a", "b"), step("b", "a")], "dependency cycle: a -> b -> a"),
        ([step("a", "ghost")], "depends on unknown step 'ghost'"),
        ([step("a"), step("a")], "duplicate step name 'a'"),
    ):
        with pytest.raises(ValidationError, match=message):
            Pipeline.from_object(pipeline(steps))


def test_job_phase() -> None:
    assert job_phase({}) == (RUNNING, "")
    assert job_phase({"status": {"conditions": [{"type": "Complete", "status": "True"}]}}) == (SUCCEEDED, "")
    failed = {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded", "message": "too many"}
    assert job_phase({"status": {"conditions": [failed]}}) == (FAILED, "too many")
    assert job_phase({"status": {"conditions": [{**failed, "status": "False"}]}}) == (RUNNING, "")


def test_overall_phase() -> None:
    assert overall_phase({"a": PENDING}) == PENDING
    assert overall_phase({"a": SUCCEEDED, "b": PENDING}) == RUNNING
    assert overall_phase({"a": SUCCEEDED, "b": SUCCEEDED}) == SUCCEEDED
    assert overall_phase({"a": SUCCEEDED, "b": FAILED, "c": PENDING}) == FAILED


def conditions(status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in status["conditions"]}


def test_status_conditions_and_idempotence() -> None:
    p = Pipeline.from_object(pipeline([step("a"), step("b", "a")]))
    running = pipeline_status(p, {"a": RUNNING, "b": PENDING}, {}, {"a": "p-a"}, 100.0)
    assert running is not None
    assert running["observedGeneration"] == 2
    assert running["steps"] == [
        {"name": "a", "phase": RUNNING, "jobName": "p-a"},
        {"name": "b", "phase": PENDING},
    ]
    by_type = conditions(running)
    assert by_type["Succeeded"]["status"] == "Unknown"
    assert by_type["Failed"]["status"] == "False"
    assert by_type["Succeeded"]["observedGeneration"] == 2
    # the same again: nothing to write
    p2 = Pipeline.from_object(pipeline([step("a"), step("b", "a")], running))
    assert pipeline_status(p2, {"a": RUNNING, "b": PENDING}, {}, {"a": "p-a"}, 200.0) is None
    # b fails: Failed True naming the step; lastTransitionTime moves only where status moved
    failed = pipeline_status(
        p2, {"a": SUCCEEDED, "b": FAILED}, {"b": "BackoffLimitExceeded"}, {"a": "p-a"}, 300.0
    )
    assert failed is not None
    assert failed["phase"] == FAILED
    by_type = conditions(failed)
    assert by_type["Failed"]["status"] == "True"
    assert by_type["Failed"]["message"] == "step b failed: BackoffLimitExceeded"
    assert by_type["Succeeded"]["status"] == "False"
    assert failed["steps"][1] == {"name": "b", "phase": FAILED, "message": "BackoffLimitExceeded"}
