"""Deployment status and conditions (upstream: pkg/controller/deployment/sync.go `calculateStatus`,
progress.go, util/deployment_util.go `SetDeploymentCondition`, `DeploymentComplete`, `DeploymentProgressing`,
`DeploymentTimedOut`, `HasProgressDeadline`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from controllers.common.podutil import Obj, parse_time
from controllers.deployment.replicas import (
    available,
    max_unavailable,
    ready,
    spec_replicas,
    status_replicas,
    sum_spec,
)
from manager import format_time

AVAILABLE = "Available"
PROGRESSING = "Progressing"
REPLICA_FAILURE = "ReplicaFailure"

# reasons
MINIMUM_REPLICAS_AVAILABLE = "MinimumReplicasAvailable"
MINIMUM_REPLICAS_UNAVAILABLE = "MinimumReplicasUnavailable"
NEW_RS_CREATED = "NewReplicaSetCreated"
FOUND_NEW_RS = "FoundNewReplicaSet"
RS_UPDATED = "ReplicaSetUpdated"
NEW_RS_AVAILABLE = "NewReplicaSetAvailable"
TIMED_OUT = "ProgressDeadlineExceeded"
PAUSED = "DeploymentPaused"
RESUMED = "DeploymentResumed"
FAILED_RS_CREATE = "ReplicaSetCreateError"

MAX_INT32 = 2**31 - 1


def new_condition(kind: str, status: str, reason: str, message: str, now: float) -> Obj:
    stamp = format_time(now)
    return {
        "type": kind,
        "status": status,
        "lastUpdateTime": stamp,
        "lastTransitionTime": stamp,
        "reason": reason,
        "message": message,
    }


def get_condition(status: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for c in status.get("conditions") or ():
        if c.get("type") == kind:
            cond: Mapping[str, Any] = c
            return cond
    return None


def set_condition(status: Obj, condition: Obj) -> None:
    """Same status and reason: no-op. Same status: lastTransitionTime kept. The condition moves to the end."""
    current = get_condition(status, condition["type"])
    if current is not None and current.get("status") == condition["status"]:
        if current.get("reason") == condition["reason"]:
            return
        condition = {**condition, "lastTransitionTime": current.get("lastTransitionTime")}
    remove_condition(status, condition["type"])
    status["conditions"] = [*(status.get("conditions") or ()), condition]


def remove_condition(status: Obj, kind: str) -> None:
    conditions = [c for c in status.get("conditions") or () if c.get("type") != kind]
    if conditions:
        status["conditions"] = conditions
    else:
        status.pop("conditions", None)


def has_progress_deadline(d: Mapping[str, Any]) -> bool:
    deadline = (d.get("spec") or {}).get("progressDeadlineSeconds")
    return deadline is not None and int(deadline) != MAX_INT32


def has_revision_history_limit(d: Mapping[str, Any]) -> bool:
    limit = (d.get("spec") or {}).get("revisionHistoryLimit")
    return limit is not None and int(limit) != MAX_INT32


def check_paused_conditions(d: Obj, now: float) -> bool:
    """Progressing Unknown DeploymentPaused / DeploymentResumed when the pause state flipped (restarting the
    deadline clock), never over ProgressDeadlineExceeded; True when the status changed."""
    if not has_progress_deadline(d):
        return False
    status: Obj = d.setdefault("status", {})
    current = get_condition(status, PROGRESSING)
    if current is not None and current.get("reason") == TIMED_OUT:
        return False
    paused_recorded = current is not None and current.get("reason") == PAUSED
    paused = bool((d.get("spec") or {}).get("paused"))
    if paused and not paused_recorded:
        set_condition(status, new_condition(PROGRESSING, "Unknown", PAUSED, "Deployment is paused", now))
        return True
    if not paused and paused_recorded:
        set_condition(status, new_condition(PROGRESSING, "Unknown", RESUMED, "Deployment is resumed", now))
        return True
    return False


def calculate_status(d: Mapping[str, Any], all_rss: Sequence[Obj], new_rs: Obj | None, now: float) -> Obj:
    """The Deployment status its ReplicaSets add up to, with the Available condition set accordingly and the
    other conditions kept."""
    old: Mapping[str, Any] = d.get("status") or {}
    avail = sum(available(rs) for rs in all_rss)
    status: Obj = {
        "observedGeneration": int((d.get("metadata") or {}).get("generation") or 0),
        "replicas": sum(status_replicas(rs) for rs in all_rss),
        "updatedReplicas": status_replicas(new_rs) if new_rs is not None else 0,
        "readyReplicas": sum(ready(rs) for rs in all_rss),
        "availableReplicas": avail,
        "unavailableReplicas": max(0, sum_spec(all_rss) - avail),
    }
    if old.get("collisionCount") is not None:
        status["collisionCount"] = old["collisionCount"]
    if old.get("conditions"):
        status["conditions"] = [dict(c) for c in old["conditions"]]
    if avail >= spec_replicas(d) - max_unavailable(d):
        cond = new_condition(
            AVAILABLE, "True", MINIMUM_REPLICAS_AVAILABLE, "Deployment has minimum availability.", now
        )
    else:
        cond = new_condition(
            AVAILABLE,
            "False",
            MINIMUM_REPLICAS_UNAVAILABLE,
            "Deployment does not have minimum availability.",
            now,
        )
    set_condition(status, cond)
    return status


def deployment_complete(d: Mapping[str, Any], status: Mapping[str, Any]) -> bool:
    replicas = spec_replicas(d)
    return (
        int(status.get("updatedReplicas") or 0) == replicas
        and int(status.get("replicas") or 0) == replicas
        and int(status.get("availableReplicas") or 0) == replicas
        and int(status.get("observedGeneration") or 0)
        >= int((d.get("metadata") or {}).get("generation") or 0)
    )


def deployment_progressing(d: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """More updated, fewer old, more ready or more available replicas than the last recorded status."""
    old: Mapping[str, Any] = d.get("status") or {}

    def n(s: Mapping[str, Any], key: str) -> int:
        return int(s.get(key) or 0)

    return (
        n(new, "updatedReplicas") > n(old, "updatedReplicas")
        or n(new, "replicas") - n(new, "updatedReplicas") < n(old, "replicas") - n(old, "updatedReplicas")
        or n(new, "readyReplicas") > n(old, "readyReplicas")
        or n(new, "availableReplicas") > n(old, "availableReplicas")
    )


def deadline_seconds(d: Mapping[str, Any]) -> int:
    return int((d.get("spec") or {}).get("progressDeadlineSeconds") or 0)


def deployment_timed_out(d: Mapping[str, Any], status: Mapping[str, Any], now: float) -> bool:
    if not has_progress_deadline(d):
        return False
    cond = get_condition(status, PROGRESSING)
    if cond is None or cond.get("reason") == NEW_RS_AVAILABLE:
        return False
    if cond.get("reason") == TIMED_OUT:
        return True
    since = parse_time(cond.get("lastUpdateTime"))
    return since is not None and since + deadline_seconds(d) < now


def rollout_status(
    d: Mapping[str, Any], status: Obj, all_rss: Sequence[Obj], new_rs: Obj | None, now: float
) -> Obj:
    """syncRolloutStatus's condition logic on a freshly calculated status: Progressing (complete,
    progressing or timed out) and the ReplicaFailure condition of the ReplicaSets."""
    name = (d.get("metadata") or {}).get("name")
    subject = f'ReplicaSet "{new_rs["metadata"]["name"]}"' if new_rs is not None else f'Deployment "{name}"'
    if not has_progress_deadline(d):
        remove_condition(status, PROGRESSING)
    current = get_condition(d.get("status") or {}, PROGRESSING)
    is_complete = (
        status.get("replicas") == status.get("updatedReplicas")
        and current is not None
        and current.get("reason") == NEW_RS_AVAILABLE
    )
    if has_progress_deadline(d) and not is_complete:
        if deployment_complete(d, status):
            msg = f"{subject} has successfully progressed."
            set_condition(status, new_condition(PROGRESSING, "True", NEW_RS_AVAILABLE, msg, now))
        elif deployment_progressing(d, status):
            cond = new_condition(PROGRESSING, "True", RS_UPDATED, f"{subject} is progressing.", now)
            # Unlike set_condition, the same reason still refreshes lastUpdateTime: that is the clock.
            if current is not None:
                if current.get("status") == "True":
                    cond["lastTransitionTime"] = current.get("lastTransitionTime")
                remove_condition(status, PROGRESSING)
            set_condition(status, cond)
        elif deployment_timed_out(d, status, now):
            msg = f"{subject} has timed out progressing."
            set_condition(status, new_condition(PROGRESSING, "False", TIMED_OUT, msg, now))
    failure = replica_failure(new_rs, all_rss)
    if failure is not None:
        set_condition(status, failure)
    else:
        remove_condition(status, REPLICA_FAILURE)
    return status


def replica_failure(new_rs: Mapping[str, Any] | None, all_rss: Sequence[Mapping[str, Any]]) -> Obj | None:
    """The ReplicaFailure condition to copy from the new ReplicaSet, else from any ReplicaSet's."""
    candidates = [new_rs] if new_rs is not None else []
    for rs in [*candidates, *all_rss]:
        for c in (rs.get("status") or {}).get("conditions") or ():
            if c.get("type") == REPLICA_FAILURE:
                return {
                    "type": REPLICA_FAILURE,
                    "status": c.get("status"),
                    "lastUpdateTime": c.get("lastTransitionTime"),
                    "lastTransitionTime": c.get("lastTransitionTime"),
                    "reason": c.get("reason"),
                    "message": c.get("message"),
                }
    return None


def stuck_requeue_delay(d: Mapping[str, Any], new_status: Mapping[str, Any], now: float) -> float | None:
    """requeueStuckDeployment: seconds until the deadline check is due (already +1 s against timer skew),
    0.0 for "check again soon, rate limited", None when no check is needed."""
    current = get_condition(d.get("status") or {}, PROGRESSING)
    if not has_progress_deadline(d) or current is None:
        return None
    if deployment_complete(d, new_status) or current.get("reason") == TIMED_OUT:
        return None
    since = parse_time(current.get("lastUpdateTime"))
    if since is None:
        return None
    after = since + deadline_seconds(d) - now
    if after < 1.0:
        return 0.0
    return after + 1.0
