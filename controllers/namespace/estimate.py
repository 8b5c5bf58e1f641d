"""How long pods of a terminating namespace may still take to go: the controller waits that long (halved)
before it looks again, instead of hammering the API server while kubelets stop containers."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

FINISHED_PHASES = ("Succeeded", "Failed")


def pod_grace_estimate(pods: Iterable[Mapping[str, Any]], deleted_at: float, now: float) -> int:
    """The longest terminationGracePeriodSeconds among pods not finished, in whole seconds; 0 once that
    much time has passed since the namespace's deletionTimestamp (they should be gone by then)."""
    estimate = 0
    for pod in pods:
        if (pod.get("status") or {}).get("phase") in FINISHED_PHASES:
            continue
        grace = (pod.get("spec") or {}).get("terminationGracePeriodSeconds")
        if isinstance(grace, int) and grace > estimate:
            estimate = grace
    if now - deleted_at >= estimate:
        return 0
    return estimate
