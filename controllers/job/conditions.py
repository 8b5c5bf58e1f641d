"""Job conditions: types, reasons, messages, and the update rule upstream calls ensureJobConditionStatus."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from manager import format_time

COMPLETE = "Complete"
FAILED = "Failed"
FAILURE_TARGET = "FailureTarget"
SUCCESS_CRITERIA_MET = "SuccessCriteriaMet"
SUSPENDED = "Suspended"

REASON_BACKOFF_LIMIT_EXCEEDED = "BackoffLimitExceeded"
REASON_DEADLINE_EXCEEDED = "DeadlineExceeded"
REASON_POD_FAILURE_POLICY = "PodFailurePolicy"
REASON_FAILED_INDEXES = "FailedIndexes"
REASON_MAX_FAILED_INDEXES_EXCEEDED = "MaxFailedIndexesExceeded"
REASON_SUCCESS_POLICY = "SuccessPolicy"
REASON_COMPLETIONS_REACHED = "CompletionsReached"

MSG_BACKOFF_LIMIT_EXCEEDED = "Job has reached the specified backoff limit"
MSG_DEADLINE_EXCEEDED = "Job was active longer than specified deadline"
MSG_MAX_FAILED_INDEXES_EXCEEDED = "Job has exceeded the specified maximal number of failed indexes"
MSG_FAILED_INDEXES = "Job has failed indexes"
MSG_COMPLETIONS_REACHED = "Reached expected number of succeeded pods"

Condition = dict[str, Any]


def new_condition(ctype: str, status: str, reason: str, message: str, now: float) -> Condition:
    stamp = format_time(now)
    return {
        "type": ctype,
        "status": status,
        "lastProbeTime": stamp,
        "lastTransitionTime": stamp,
        "reason": reason,
        "message": message,
    }


def find_condition(conditions: Sequence[Mapping[str, Any]] | None, ctype: str) -> Mapping[str, Any] | None:
    for cond in conditions or ():
        if cond.get("type") == ctype:
            return cond
    return None


def is_condition_true(conditions: Sequence[Mapping[str, Any]] | None, ctype: str) -> bool:
    cond = find_condition(conditions, ctype)
    return cond is not None and cond.get("status") == "True"


def is_job_finished(job: Mapping[str, Any]) -> bool:
    conditions = (job.get("status") or {}).get("conditions")
    return is_condition_true(conditions, COMPLETE) or is_condition_true(conditions, FAILED)


def ensure_condition(
    conditions: list[Condition], ctype: str, status: str, reason: str, message: str, now: float
) -> bool:
    """Make `conditions` carry (ctype, status, reason, message), in place. Returns whether anything changed.

    An existing condition is rewritten only when status, reason or message differ (its times move to now);
    a missing condition is appended unless the wanted status is "False" (absence already means not true).
    """
    for i, cond in enumerate(conditions):
        if cond.get("type") != ctype:
            continue
        if (
            cond.get("status") == status
            and cond.get("reason", "") == reason
            and cond.get("message", "") == message
        ):
            return False
        stamp = format_time(now)
        conditions[i] = {
            **cond,
            "status": status,
            "reason": reason,
            "message": message,
            "lastProbeTime": stamp,
            "lastTransitionTime": stamp,
        }
        return True
    if status == "False":
        return False
    conditions.append(new_condition(ctype, status, reason, message, now))
    return True
