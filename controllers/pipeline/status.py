"""A Pipeline's status from its steps' phases: each step's phase, the Pipeline's phase, `observedGeneration`,
and two metav1.Conditions set with apimachinery's `SetStatusCondition` rules (`lastTransitionTime` moves only
when `status` does):

| Pipeline    | `Succeeded`                  | `Failed`                                   |
|-------------|------------------------------|--------------------------------------------|
| in progress | Unknown, reason `Running`    | False, reason `NoStepFailed`               |
| succeeded   | True, reason `StepsSucceeded`| False, reason `NoStepFailed`               |
| failed      | False, reason `StepFailed`   | True, reason `StepFailed`, naming the step |

(The `Invalid` condition belongs to the toolkit: True, reason `InvalidSpec`, while the spec is invalid.)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from controllers.pipeline.dag import FAILED, PENDING, RUNNING, SUCCEEDED
from manager import set_status_condition

if TYPE_CHECKING:
    from controllers.pipeline.types import Pipeline

Obj = dict[str, Any]


def job_phase(job: Mapping[str, Any]) -> tuple[str, str]:
    """A step's phase from its Job's conditions, with the failure's message: Succeeded (Complete True),
    Failed (Failed True), else Running."""
    for cond in (job.get("status") or {}).get("conditions") or ():
        if cond.get("status") != "True":
            continue
        if cond.get("type") == "Complete":
            return SUCCEEDED, ""
        if cond.get("type") == "Failed":
            detail = cond.get("message") or cond.get("reason") or "the Job failed"
            return FAILED, str(detail)
    return RUNNING, ""


def overall_phase(phases: Mapping[str, str]) -> str:
    values = list(phases.values())
    if any(p == FAILED for p in values):
        return FAILED
    if values and all(p == SUCCEEDED for p in values):
        return SUCCEEDED
    if any(p in (RUNNING, SUCCEEDED) for p in values):
        return RUNNING
    return PENDING


def pipeline_status(
    pipeline: Pipeline,
    phases: Mapping[str, str],
    messages: Mapping[str, str],
    job_names: Mapping[str, str],
    now: float,
) -> Obj | None:
    """The status to merge-patch, or None when the recorded status already says all this."""
    generation = pipeline.metadata.generation
    current = pipeline.status
    steps: list[Obj] = []
    for name, phase in phases.items():
        entry: Obj = {"name": name, "phase": phase}
        if name in job_names:
            entry["jobName"] = job_names[name]
        elif current is not None:  # keep the name of a Job that was deleted after it finished
            old = next((s for s in current.steps if s.name == name), None)
            if old is not None and old.job_name and phase in (SUCCEEDED, FAILED):
                entry["jobName"] = old.job_name
        if phase == FAILED and messages.get(name):
            entry["message"] = messages[name]
        steps.append(entry)
    phase = overall_phase(phases)
    failed = next((n for n, p in phases.items() if p == FAILED), None)
    succeeded: Obj
    failure: Obj
    if failed is not None:
        detail = messages.get(failed) or "its Job failed"
        why = f"step {failed} failed: {detail}"
        succeeded = {"type": "Succeeded", "status": "False", "reason": "StepFailed", "message": why}
        failure = {"type": "Failed", "status": "True", "reason": "StepFailed", "message": why}
    else:
        done = sum(1 for p in phases.values() if p == SUCCEEDED)
        progress = f"{done} of {len(phases)} steps succeeded"
        if phase == SUCCEEDED:
            value, reason = "True", "StepsSucceeded"
        else:
            value, reason = "Unknown", "Running"
        succeeded = {"type": "Succeeded", "status": value, "reason": reason, "message": progress}
        failure = {"type": "Failed", "status": "False", "reason": "NoStepFailed", "message": "no step failed"}
    conditions = [dict(c) for c in (current.conditions if current else [])]
    changed = False
    for cond in (succeeded, failure):
        if generation is not None:
            cond["observedGeneration"] = generation
        changed = set_status_condition(conditions, cond, now) or changed
    recorded = current.model_dump(by_alias=True, exclude_none=True) if current else {}
    status: Obj = {"observedGeneration": generation, "phase": phase, "steps": steps, "conditions": conditions}
    if not changed and all(recorded.get(k) == v for k, v in status.items() if k != "conditions"):
        return None
    return status
