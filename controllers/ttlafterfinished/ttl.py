"""When a finished Job's TTL runs out (upstream: needsCleanup, jobFinishTime and timeLeft in
pkg/controller/ttlafterfinished/ttlafterfinished_controller.go)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from controllers.common.podutil import parse_time

FINISHED_TYPES = ("Complete", "Failed")


class FinishTimeUnknown(ValueError):
    """A finished Job whose finishing condition carries no lastTransitionTime."""


def ttl_seconds(job: Mapping[str, Any]) -> int | None:
    value = (job.get("spec") or {}).get("ttlSecondsAfterFinished")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def finishing_condition(job: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The Complete or Failed condition that is True, if the Job finished."""
    conditions: list[Mapping[str, Any]] = (job.get("status") or {}).get("conditions") or []
    for cond in conditions:
        if cond.get("type") in FINISHED_TYPES and cond.get("status") == "True":
            return cond
    return None


def needs_cleanup(job: Mapping[str, Any]) -> bool:
    """Finished, with a TTL set."""
    return ttl_seconds(job) is not None and finishing_condition(job) is not None


def is_candidate(job: Mapping[str, Any]) -> bool:
    """Worth a look: not being deleted already, and needs cleanup."""
    return not (job.get("metadata") or {}).get("deletionTimestamp") and needs_cleanup(job)


@dataclass(frozen=True)
class Expiry:
    finished_at: float
    expires_at: float

    def remaining(self, now: float) -> float:
        return self.expires_at - now


def expiry(job: Mapping[str, Any]) -> Expiry:
    """Finish time (the finishing condition's lastTransitionTime) and finish + TTL; the Job must need
    cleanup."""
    cond = finishing_condition(job)
    ttl = ttl_seconds(job)
    if cond is None or ttl is None:
        raise ValueError("the Job has not finished or has no ttlSecondsAfterFinished")
    finished_at = parse_time(cond.get("lastTransitionTime"))
    if finished_at is None:
        meta = job.get("metadata") or {}
        raise FinishTimeUnknown(
            f"unable to find the time when the Job {meta.get('namespace')}/{meta.get('name')} finished"
        )
    return Expiry(finished_at, finished_at + ttl)
