"""spec.podFailurePolicy: which rule (if any) a failed pod matches and what it means.

Rules are evaluated in order and the first match wins. `onExitCodes` looks at terminated containers (then init
containers) with a non-zero exit code, optionally only the named container; `onPodConditions` matches a pod
condition's type and status (status defaults to "True").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

FAIL_JOB = "FailJob"
IGNORE = "Ignore"
COUNT = "Count"
FAIL_INDEX = "FailIndex"


@dataclass(frozen=True, slots=True)
class PolicyMatch:
    """The outcome for one failed pod: `count_failed` says whether it counts towards failed/backoffLimit;
    `action` is the matched rule's action (None when no rule matched); `fail_job_message` is set for
    FailJob."""

    count_failed: bool = True
    action: str | None = None
    fail_job_message: str | None = None


NO_MATCH = PolicyMatch()


def _matching_container(
    statuses: Iterable[Mapping[str, Any]], req: Mapping[str, Any]
) -> Mapping[str, Any] | None:
    name = req.get("containerName")
    operator = req.get("operator")
    values = set(req.get("values") or [])
    for status in statuses:
        terminated = (status.get("state") or {}).get("terminated")
        if not terminated:
            continue  # still running or terminating: no exit code to look at
        if name is not None and status.get("name") != name:
            continue
        code = int(terminated.get("exitCode") or 0)
        if code == 0:
            continue
        if (operator == "In" and code in values) or (operator == "NotIn" and code not in values):
            return status
    return None


def _match_exit_codes(pod_status: Mapping[str, Any], req: Mapping[str, Any]) -> Mapping[str, Any] | None:
    return _matching_container(pod_status.get("containerStatuses") or [], req) or _matching_container(
        pod_status.get("initContainerStatuses") or [], req
    )


def _match_pod_conditions(
    pod_status: Mapping[str, Any], patterns: Iterable[Mapping[str, Any]]
) -> Mapping[str, Any] | None:
    wanted = [(p.get("type"), p.get("status") or "True") for p in patterns]
    for cond in pod_status.get("conditions") or []:
        if (cond.get("type"), cond.get("status")) in wanted:
            matched: Mapping[str, Any] = cond
            return matched
    return None


def match_pod_failure_policy(policy: Mapping[str, Any] | None, pod: Mapping[str, Any]) -> PolicyMatch:
    """Evaluate `policy` against a failed pod."""
    if not policy:
        return NO_MATCH
    status = pod.get("status") or {}
    meta = pod.get("metadata") or {}
    for position, rule in enumerate(policy.get("rules") or []):
        action = rule.get("action")
        message: str | None = None
        if rule.get("onExitCodes") is not None:
            container = _match_exit_codes(status, rule["onExitCodes"])
            if container is None:
                continue
            code = container["state"]["terminated"].get("exitCode")
            message = (
                f"Container {container.get('name')} for pod {meta.get('namespace')}/{meta.get('name')} "
                f"failed with exit code {code} matching {action} rule at index {position}"
            )
        elif rule.get("onPodConditions") is not None:
            cond = _match_pod_conditions(status, rule["onPodConditions"])
            if cond is None:
                continue
            message = (
                f"Pod {meta.get('namespace')}/{meta.get('name')} has condition {cond.get('type')} "
                f"matching {action} rule at index {position}"
            )
        else:
            continue
        if action == IGNORE:
            return PolicyMatch(False, IGNORE)
        if action == COUNT:
            return PolicyMatch(True, COUNT)
        if action == FAIL_INDEX:
            return PolicyMatch(True, FAIL_INDEX)
        if action == FAIL_JOB:
            return PolicyMatch(True, FAIL_JOB, message)
        # An unknown action (newer API) is skipped, as upstream's switch falls through.
    return NO_MATCH
