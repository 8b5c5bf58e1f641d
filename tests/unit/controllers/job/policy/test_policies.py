"""podFailurePolicy rule matching and successPolicy rules."""

from __future__ import annotations

from typing import Any

from controllers.job.indexed.intervals import Intervals
from controllers.job.policy.failure import COUNT, FAIL_INDEX, FAIL_JOB, IGNORE, match_pod_failure_policy
from controllers.job.policy.success import match_success_policy


def failed_pod(
    codes: dict[str, int],
    *,
    init: dict[str, int] | None = None,
    conditions: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    def statuses(values: dict[str, int]) -> list[dict[str, Any]]:
        return [{"name": n, "state": {"terminated": {"exitCode": c}}} for n, c in values.items()]

    return {
        "metadata": {"namespace": "ns", "name": "p"},
        "status": {
            "phase": "Failed",
            "containerStatuses": statuses(codes),
            "initContainerStatuses": statuses(init or {}),
            "conditions": conditions or [],
        },
    }


POLICY = {
    "rules": [
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
        {"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "In", "values": [42]}},
        {"action": "Count", "onExitCodes": {"operator": "In", "values": [3]}},
        {"action": "FailIndex", "onExitCodes": {"operator": "NotIn", "values": [1, 2, 3]}},
    ]
}


def test_no_policy_counts() -> None:
    match = match_pod_failure_policy(None, failed_pod({"main": 1}))
    assert match.count_failed and match.action is None


def test_fail_job_message_names_container_and_rule() -> None:
    match = match_pod_failure_policy(POLICY, failed_pod({"side": 0, "main": 42}))
    assert match.action == FAIL_JOB and match.count_failed
    assert (
        match.fail_job_message
        == "Container main for pod ns/p failed with exit code 42 matching FailJob rule at index 1"
    )


def test_container_name_restricts_match() -> None:
    # 42 in a container not named "main" does not match rule 1; NotIn [1,2,3] (rule 3) matches instead
    match = match_pod_failure_policy(POLICY, failed_pod({"side": 42}))
    assert match.action == FAIL_INDEX


def test_ignore_on_condition_and_default_status_true() -> None:
    pod = failed_pod({"main": 42}, conditions=[{"type": "DisruptionTarget", "status": "True"}])
    match = match_pod_failure_policy(POLICY, pod)
    assert match.action == IGNORE and not match.count_failed
    pod["status"]["conditions"][0]["status"] = "False"
    assert match_pod_failure_policy(POLICY, pod).action == FAIL_JOB


def test_count_and_exit_code_zero_never_matches() -> None:
    assert match_pod_failure_policy(POLICY, failed_pod({"main": 3})).action == COUNT
    no_match = match_pod_failure_policy(POLICY, failed_pod({"main": 0, "x": 2}))
    assert no_match.action is None and no_match.count_failed


def test_init_containers_looked_at_after_containers() -> None:
    match = match_pod_failure_policy(POLICY, failed_pod({}, init={"main": 42}))
    assert match.action == FAIL_JOB


def test_pod_condition_fail_job_message() -> None:
    policy = {
        "rules": [{"action": "FailJob", "onPodConditions": [{"type": "ConfigIssue", "status": "True"}]}]
    }
    pod = failed_pod({}, conditions=[{"type": "ConfigIssue", "status": "True"}])
    assert (
        match_pod_failure_policy(policy, pod).fail_job_message
        == "Pod ns/p has condition ConfigIssue matching FailJob rule at index 0"
    )


def test_success_policy_rules() -> None:
    succeeded = Intervals.parse("0,2-4")
    assert match_success_policy(None, 10, succeeded) is None
    assert (
        match_success_policy({"rules": [{"succeededIndexes": "0,2"}]}, 10, succeeded)
        == "Matched rules at index 0"
    )
    policy = {"rules": [{"succeededIndexes": "0-3"}, {"succeededCount": 4}]}
    assert match_success_policy(policy, 10, succeeded) == "Matched rules at index 1"
    assert match_success_policy({"rules": [{"succeededCount": 5}]}, 10, succeeded) is None
    counted = {"rules": [{"succeededIndexes": "1-4", "succeededCount": 3}]}
    assert match_success_policy(counted, 10, succeeded) == "Matched rules at index 0"
    assert match_success_policy({"rules": [{"succeededIndexes": "bogus"}]}, 10, succeeded) is None
    assert match_success_policy({"rules": [{"succeededCount": 1}]}, 10, Intervals()) is None
