"""Job status validation on /status writes (ValidateJobStatusUpdate with the options the 1.32 Job strategy
sets): every rule but the counters and terminal conditions only fires when a field it reads changed, so
that a status write unrelated to an already-inconsistent field still goes through."""

from __future__ import annotations

from typing import Any

from kubesim.validation.common import JSON, OMIT, Causes, duplicate, invalid, non_negative, required
from kubesim.validation.job import INDEXED, condition_true, parse_indexes


def _finished(job: JSON) -> bool:
    return condition_true(job, "Complete") or condition_true(job, "Failed")


def _conditions_error(detail: str) -> JSON:
    return invalid("status.conditions", OMIT, detail)


def _counts(status: JSON) -> Causes:
    causes: Causes = []
    for key in ("active", "succeeded", "failed", "ready", "terminating"):
        causes += non_negative(f"status.{key}", status.get(key))
    uncounted = status.get("uncountedTerminatedPods") or {}
    seen: set[Any] = set()
    for kind in ("succeeded", "failed"):
        for i, uid in enumerate(uncounted.get(kind) or []):
            field = f"status.uncountedTerminatedPods.{kind}[{i}]"
            if not uid:
                causes.append(invalid(field, uid, "must not be empty"))
            elif uid in seen:
                causes.append(duplicate(field, uid))
            seen.add(uid)
    return causes


def validate_job_status(new: JSON, old: JSON) -> Causes:
    status, old_status = new.get("status") or {}, old.get("status") or {}
    spec = new.get("spec") or {}

    def changed(key: str) -> bool:
        return status.get(key) != old_status.get(key)

    complete, failed = condition_true(new, "Complete"), condition_true(new, "Failed")
    failure_target, criteria_met = (
        condition_true(new, "FailureTarget"),
        condition_true(new, "SuccessCriteriaMet"),
    )
    finished = complete or failed
    complete_changed = complete != condition_true(old, "Complete")
    failed_changed = failed != condition_true(old, "Failed")
    finished_changed = finished != _finished(old)
    target_changed = failure_target != condition_true(old, "FailureTarget")
    criteria_changed = criteria_met != condition_true(old, "SuccessCriteriaMet")
    indexed = spec.get("completionMode") == INDEXED
    completions = spec.get("completions")
    causes = _counts(status)

    if (complete_changed or failed_changed) and complete and failed:
        causes.append(_conditions_error("cannot set Complete=True and Failed=true conditions"))
    if (complete_changed or target_changed) and complete and failure_target:
        causes.append(_conditions_error("cannot set Complete=True and FailureTarget=true conditions"))
    if (complete_changed or changed("completionTime")) and status.get("completionTime") and not complete:
        causes.append(
            invalid(
                "status.completionTime",
                status["completionTime"],
                "cannot set completionTime when there is no Complete=True condition",
            )
        )
    if (complete_changed or changed("completionTime")) and complete and not status.get("completionTime"):
        causes.append(required("status.completionTime", "completionTime is required for Complete jobs"))
    if (
        (changed("startTime") or changed("completionTime"))
        and status.get("startTime")
        and status.get("completionTime")
        and str(status["completionTime"]) < str(status["startTime"])
    ):
        causes.append(
            invalid(
                "status.completionTime",
                status["completionTime"],
                "completionTime cannot be set before startTime",
            )
        )
    if failed_changed and failed and not failure_target:
        causes.append(
            _conditions_error("cannot set Failed=True condition without the FailureTarget=true condition")
        )
    if (complete_changed or criteria_changed) and complete and not criteria_met:
        causes.append(
            _conditions_error(
                "cannot set Complete=True condition without the SuccessCriteriaMet=true condition"
            )
        )
    if (finished_changed or changed("active")) and finished and (status.get("active") or 0) > 0:
        causes.append(invalid("status.active", status["active"], "active>0 is invalid for finished job"))
    if (finished_changed or changed("startTime")) and finished and not status.get("startTime"):
        suspended_empty = spec.get("suspend") is True and completions == 0
        if not suspended_empty:
            causes.append(required("status.startTime", "startTime is required for finished job"))
    uncounted = status.get("uncountedTerminatedPods") or {}
    if (
        (finished_changed or changed("uncountedTerminatedPods"))
        and finished
        and (uncounted.get("succeeded") or uncounted.get("failed"))
    ):
        causes.append(
            invalid(
                "status.uncountedTerminatedPods",
                OMIT,
                "uncountedTerminatedPods needs to be empty for finished job",
            )
        )
    if (finished_changed or changed("terminating")) and finished and (status.get("terminating") or 0) > 0:
        causes.append(
            invalid("status.terminating", status["terminating"], "terminating>0 is invalid for finished job")
        )
    if (changed("ready") or changed("active")) and (status.get("ready") or 0) > (status.get("active") or 0):
        causes.append(invalid("status.ready", status["ready"], "cannot set more ready pods than active"))
    causes += _indexes(status, spec, changed, indexed, completions)
    if criteria_met and failed:
        causes.append(_conditions_error("cannot set SuccessCriteriaMet=True and Failed=true conditions"))
    if criteria_met and failure_target:
        causes.append(
            _conditions_error("cannot set SuccessCriteriaMet=True and FailureTarget=true conditions")
        )
    if spec.get("successPolicy") is not None and complete and not criteria_met:
        causes.append(
            _conditions_error(
                "cannot set Complete=True for Job with SuccessPolicy unless SuccessCriteriaMet=True"
            )
        )
    causes += _transitions(new, old, status, old_status, spec)
    return causes


def _indexes(status: JSON, spec: JSON, changed: Any, indexed: bool, completions: Any) -> Causes:
    causes: Causes = []
    completed, failed_indexes = status.get("completedIndexes") or "", status.get("failedIndexes")
    if changed("completedIndexes"):
        if isinstance(completions, int):
            error = parse_indexes(completed, completions)[1]
            if error:
                causes.append(
                    invalid("status.completedIndexes", completed, f"error parsing completedIndexes: {error}")
                )
        if completed and not indexed:
            causes.append(
                invalid(
                    "status.completedIndexes",
                    completed,
                    "cannot set non-empty completedIndexes when non-indexed completion mode",
                )
            )
    if changed("failedIndexes") and failed_indexes is not None:
        if isinstance(completions, int) and spec.get("backoffLimitPerIndex") is not None:
            error = parse_indexes(failed_indexes, completions)[1]
            if error:
                causes.append(
                    invalid("status.failedIndexes", failed_indexes, f"error parsing failedIndexes: {error}")
                )
        if spec.get("backoffLimitPerIndex") is None:
            causes.append(
                invalid(
                    "status.failedIndexes",
                    failed_indexes,
                    "cannot set non-null failedIndexes when backoffLimitPerIndex is null",
                )
            )
    if (
        (changed("failedIndexes") or changed("completedIndexes"))
        and failed_indexes
        and completed
        and isinstance(completions, int)
    ):
        done = parse_indexes(completed, completions)[0]
        lost = parse_indexes(failed_indexes, completions)[0]
        overlap = [max(a, c) for a, b in done for c, d in lost if a <= d and c <= b]
        if overlap:
            causes.append(
                invalid(
                    "status.failedIndexes",
                    failed_indexes,
                    f"failedIndexes and completedIndexes overlap at index: {min(overlap)}",
                )
            )
    return causes


def _transitions(new: JSON, old: JSON, status: JSON, old_status: JSON, spec: JSON) -> Causes:
    causes: Causes = []
    for condition_type in ("Failed", "Complete", "FailureTarget"):
        if condition_true(old, condition_type) and not condition_true(new, condition_type):
            causes.append(_conditions_error(f"cannot disable the terminal {condition_type}=True condition"))
    if (status.get("failed") or 0) < (old_status.get("failed") or 0):
        causes.append(
            invalid("status.failed", status.get("failed") or 0, "cannot decrease the failed counter")
        )
    scalable_indexed = spec.get("completionMode") == INDEXED and spec.get("completions") == spec.get(
        "parallelism"
    )
    if not scalable_indexed and (status.get("succeeded") or 0) < (old_status.get("succeeded") or 0):
        causes.append(
            invalid("status.succeeded", status.get("succeeded") or 0, "cannot decrease the succeeded counter")
        )
    if (
        status.get("completionTime")
        and old_status.get("completionTime")
        and status["completionTime"] != old_status["completionTime"]
    ):
        causes.append(
            invalid("status.completionTime", status["completionTime"], "completionTime cannot be mutated")
        )
    if (
        old_status.get("startTime")
        and status.get("startTime") != old_status["startTime"]
        and not spec.get("suspend")
    ):
        causes.append(required("status.startTime", "startTime cannot be removed for unsuspended job"))
    if condition_true(old, "SuccessCriteriaMet") and not condition_true(new, "SuccessCriteriaMet"):
        causes.append(_conditions_error("cannot disable the SuccessCriteriaMet=True condition"))
    if (
        condition_true(old, "Complete")
        and not condition_true(old, "SuccessCriteriaMet")
        and condition_true(new, "SuccessCriteriaMet")
    ):
        causes.append(
            _conditions_error(
                "cannot set SuccessCriteriaMet=True for Job already has Complete=true conditions"
            )
        )
    return causes
