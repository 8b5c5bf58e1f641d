"""Pod recreation backoff of a Job (in memory, per Job key, as upstream's backoff store).

After n failures since the last success, a new pod is created only once `base·2^(n-1)` (capped at `cap`)
has passed since the latest failure's finish time. A success that finished after the failures resets the
count. Times are epoch seconds; the clock is injectable.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from controllers.common.podutil import parse_time

DEFAULT_POD_FAILURE_BACKOFF = 10.0
MAX_POD_FAILURE_BACKOFF = 600.0
INDEX_FAILURE_COUNT_KEY = "batch.kubernetes.io/job-index-failure-count"
INDEX_IGNORED_FAILURE_COUNT_KEY = "batch.kubernetes.io/job-index-ignored-failure-count"


@dataclass(frozen=True, slots=True)
class BackoffRecord:
    key: str
    failures_after_last_success: int = 0
    last_failure_time: float | None = None


def backoff_delay(failures: int, base: float, cap: float) -> float:
    """base·2^(failures-1), capped; 0 for no failures."""
    if failures <= 0:
        return 0.0
    delay = base
    for _ in range(1, failures):
        delay *= 2
        if delay >= cap:
            return cap
    return min(delay, cap)


def remaining_time(failures: int, last_failure: float | None, now: float, base: float, cap: float) -> float:
    if failures <= 0 or last_failure is None:
        return 0.0
    delay = backoff_delay(failures, base, cap)
    elapsed = now - last_failure
    return 0.0 if elapsed > delay else delay - elapsed


def _container_finish_time(
    statuses: Iterable[Mapping[str, Any]], latest: float | None
) -> tuple[bool, float | None]:
    for status in statuses:
        terminated = (status.get("state") or {}).get("terminated")
        if not terminated:
            return False, None
        finished = parse_time(terminated.get("finishedAt"))
        if finished is not None and (latest is None or finished > latest):
            latest = finished
    return True, latest


def finish_time(pod: Mapping[str, Any]) -> float:
    """When the pod finished: latest container finishedAt (sidecars included), else the Ready=False
    transition, else deletionTimestamp - grace period, else its creation time."""
    status = pod.get("status") or {}
    spec = pod.get("spec") or {}
    meta = pod.get("metadata") or {}
    complete, latest = _container_finish_time(status.get("containerStatuses") or [], None)
    if complete and latest is not None:
        sidecars = {
            c.get("name") for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"
        }
        side_statuses = [s for s in status.get("initContainerStatuses") or [] if s.get("name") in sidecars]
        complete, latest = _container_finish_time(side_statuses, latest)
    if complete and latest is not None:
        return latest
    for cond in status.get("conditions") or []:
        if cond.get("type") == "Ready" and cond.get("status") == "False":
            transition = parse_time(cond.get("lastTransitionTime"))
            if transition is not None:
                return transition
    deleted = parse_time(meta.get("deletionTimestamp"))
    if deleted is not None:
        return deleted - float(meta.get("deletionGracePeriodSeconds") or 0)
    return parse_time(meta.get("creationTimestamp")) or 0.0


def _annotation_int(pod: Mapping[str, Any], key: str) -> int:
    raw = ((pod.get("metadata") or {}).get("annotations") or {}).get(key)
    try:
        value = int(str(raw))
    except (TypeError, ValueError):
        return 0
    return max(value, 0)


def index_failure_count(pod: Mapping[str, Any]) -> int:
    return _annotation_int(pod, INDEX_FAILURE_COUNT_KEY)


def index_ignored_failure_count(pod: Mapping[str, Any]) -> int:
    return _annotation_int(pod, INDEX_IGNORED_FAILURE_COUNT_KEY)


@dataclass(eq=False)
class BackoffStore:
    """Per-Job backoff records; lost on restart exactly like upstream's in-memory store."""

    clock: Callable[[], float] = time.time
    base: float = DEFAULT_POD_FAILURE_BACKOFF
    cap: float = MAX_POD_FAILURE_BACKOFF
    _records: dict[str, BackoffRecord] = field(init=False, repr=False, default_factory=dict)

    def get(self, key: str) -> BackoffRecord:
        return self._records.get(key) or BackoffRecord(key)

    def new_record(
        self, key: str, new_succeeded: Iterable[Mapping[str, Any]], new_failed: Iterable[Mapping[str, Any]]
    ) -> BackoffRecord:
        """The record after this sync's newly finished pods (not stored until `update`)."""
        record = self.get(key)
        failed = sorted(finish_time(p) for p in new_failed)
        if not failed:
            # A success resets the count and no failure came after it; without any, nothing changes. The
            # success times matter only against failures (skipped: a time parse per finished pod).
            return BackoffRecord(key) if any(True for _ in new_succeeded) else record
        succeeded = sorted(finish_time(p) for p in new_succeeded)
        if not succeeded:
            return BackoffRecord(key, record.failures_after_last_success + len(failed), failed[-1])
        last_success = succeeded[-1]
        later = [t for t in failed if t > last_success]
        return BackoffRecord(key, len(later), later[-1] if later else None)

    def update(self, record: BackoffRecord) -> None:
        self._records[record.key] = record

    def remove(self, key: str) -> None:
        self._records.pop(key, None)

    def remaining(self, record: BackoffRecord) -> float:
        """Seconds until a replacement pod may be created (0 = now)."""
        return remaining_time(
            record.failures_after_last_success, record.last_failure_time, self.clock(), self.base, self.cap
        )

    def remaining_for_index(self, last_failed_pod: Mapping[str, Any] | None) -> float:
        """Per-index variant: the failure count comes from the failed pod's annotations (+1 for itself)."""
        if last_failed_pod is None:
            return 0.0
        failures = index_failure_count(last_failed_pod) + index_ignored_failure_count(last_failed_pod) + 1
        return remaining_time(failures, finish_time(last_failed_pod), self.clock(), self.base, self.cap)
