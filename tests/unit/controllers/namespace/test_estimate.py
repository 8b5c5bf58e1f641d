"""The pods' grace-period estimate of a terminating namespace."""

from __future__ import annotations

from typing import Any

from controllers.namespace.estimate import pod_grace_estimate

DELETED_AT = 1000.0


def pod(grace: int | None, phase: str = "Running") -> dict[str, Any]:
    spec = {} if grace is None else {"terminationGracePeriodSeconds": grace}
    return {"spec": spec, "status": {"phase": phase}}


def test_the_longest_grace_period_of_pods_not_finished() -> None:
    pods = [pod(30), pod(90, "Succeeded"), pod(60, "Failed"), pod(45, "Pending"), pod(None)]
    assert pod_grace_estimate(pods, DELETED_AT, DELETED_AT + 1) == 45


def test_nothing_to_wait_for_once_that_long_has_passed() -> None:
    assert pod_grace_estimate([pod(30)], DELETED_AT, DELETED_AT + 29.9) == 30
    assert pod_grace_estimate([pod(30)], DELETED_AT, DELETED_AT + 30) == 0


def test_no_pods_no_estimate() -> None:
    assert pod_grace_estimate([], DELETED_AT, DELETED_AT) == 0
    assert pod_grace_estimate([pod(0)], DELETED_AT, DELETED_AT) == 0
