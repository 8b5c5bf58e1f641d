"""ReplicaSet status: what calculateStatus computes, when updateReplicaSetStatus writes (upstream:
pkg/controller/replicaset/replica_set_utils.go)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controllers.common.podutil import Obj
from manager import format_time

REPLICA_FAILURE = "ReplicaFailure"
_COUNTS = ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas")


def desired_replicas(rs: Mapping[str, Any]) -> int:
    """spec.replicas (the API server defaults it to 1)."""
    value = (rs.get("spec") or {}).get("replicas")
    return 1 if value is None else int(value)


def error_message(exc: BaseException) -> str:
    """What Go prints for an error: the Status message of an API error, else the error text."""
    message = getattr(exc, "message", None)
    return message if isinstance(message, str) and message else str(exc)


def calculate_status(
    rs: Mapping[str, Any],
    replicas: int,
    counts: tuple[int, int, int],
    manage_error: BaseException | None,
    now: float,
) -> Obj:
    """The new status from the number of claimed active pods, their (fullyLabeled, ready, available)
    counts and the outcome of this sync's pod management.

    ReplicaFailure is added when pod management failed and the condition is absent (reason FailedCreate
    with too few pods, FailedDelete with too many), removed after a sync without error, otherwise kept."""
    old: Mapping[str, Any] = rs.get("status") or {}
    fully_labeled, ready, available = counts
    conditions: list[Obj] = [dict(c) for c in old.get("conditions") or ()]
    has_failure = any(c.get("type") == REPLICA_FAILURE for c in conditions)
    if manage_error is not None and not has_failure:
        diff = replicas - desired_replicas(rs)
        reason = "FailedCreate" if diff < 0 else ("FailedDelete" if diff > 0 else "")
        conditions.append(
            {
                "type": REPLICA_FAILURE,
                "status": "True",
                "lastTransitionTime": format_time(now),
                "reason": reason,
                "message": error_message(manage_error),
            }
        )
    elif manage_error is None and has_failure:
        conditions = [c for c in conditions if c.get("type") != REPLICA_FAILURE]

    status: Obj = {k: v for k, v in old.items() if k not in (*_COUNTS, "conditions")}
    status["replicas"] = replicas
    for field, value in (
        ("fullyLabeledReplicas", fully_labeled),
        ("readyReplicas", ready),
        ("availableReplicas", available),
    ):
        if value:  # omitempty, as the Go type serialises them
            status[field] = value
    if conditions:
        status["conditions"] = conditions
    return status


def status_unchanged(rs: Mapping[str, Any], new_status: Mapping[str, Any]) -> bool:
    """True when the write can be skipped: same counts, same conditions, generation already observed."""
    old: Mapping[str, Any] = rs.get("status") or {}
    if any(int(old.get(k) or 0) != int(new_status.get(k) or 0) for k in _COUNTS):
        return False
    if list(old.get("conditions") or ()) != list(new_status.get("conditions") or ()):
        return False
    generation = int((rs.get("metadata") or {}).get("generation") or 0)
    return generation == int(old.get("observedGeneration") or 0)


def with_status(rs: Mapping[str, Any], new_status: Mapping[str, Any]) -> Obj:
    """The object to PUT to the status subresource: observedGeneration = metadata.generation."""
    status = dict(new_status)
    generation = int((rs.get("metadata") or {}).get("generation") or 0)
    if generation:
        status["observedGeneration"] = generation
    else:
        status.pop("observedGeneration", None)
    body = dict(rs)
    body["status"] = status
    return body
