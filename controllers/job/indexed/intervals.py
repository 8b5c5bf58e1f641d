"""Completion indexes of Indexed Jobs: the interval strings of status.completedIndexes / failedIndexes, the
index a pod carries, and which indexes still need a pod.

Intervals are kept as a sorted tuple of disjoint, non-adjacent inclusive (first, last) pairs.
Formatting follows the API: a single index "3", two consecutive indexes "3,4", three or more "3-5".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

COMPLETION_INDEX_KEY = "batch.kubernetes.io/job-completion-index"


@dataclass(frozen=True, slots=True)
class Intervals:
    """An immutable set of non-negative integers stored as sorted, merged inclusive intervals."""

    spans: tuple[tuple[int, int], ...] = ()

    @classmethod
    def of(cls, indexes: Iterable[int]) -> Intervals:
        return cls().with_indexes(indexes)

    @classmethod
    def parse(cls, text: str | None, limit: int | None = None) -> Intervals:
        """Parse "1,3-5,7"; malformed parts are skipped and indexes >= `limit` dropped (as the controller does
        when it reads its own status back, so a bad string never blocks a Job)."""
        spans: list[tuple[int, int]] = []
        for part in (text or "").split(","):
            part = part.strip()
            if not part:
                continue
            first_s, sep, last_s = part.partition("-")
            try:
                first = int(first_s)
                last = int(last_s) if sep else first
            except ValueError:
                continue
            if first < 0 or last < first:
                continue
            if limit is not None:
                if first >= limit:
                    continue
                last = min(last, limit - 1)
            spans.append((first, last))
        return cls(_normalise(spans))

    def with_indexes(self, indexes: Iterable[int]) -> Intervals:
        return self.merge(Intervals(_normalise([(i, i) for i in indexes if i >= 0])))

    def merge(self, other: Intervals) -> Intervals:
        if not other.spans:
            return self
        if not self.spans:
            return other
        return Intervals(_normalise([*self.spans, *other.spans]))

    def has(self, index: int) -> bool:
        lo, hi = 0, len(self.spans)
        while lo < hi:
            mid = (lo + hi) // 2
            first, last = self.spans[mid]
            if index < first:
                hi = mid
            elif index > last:
                lo = mid + 1
            else:
                return True
        return False

    def total(self) -> int:
        return sum(last - first + 1 for first, last in self.spans)

    def indexes(self) -> Iterable[int]:
        for first, last in self.spans:
            yield from range(first, last + 1)

    def __len__(self) -> int:
        return len(self.spans)

    def __str__(self) -> str:
        parts: list[str] = []
        for first, last in self.spans:
            if first == last:
                parts.append(str(first))
            elif last == first + 1:
                parts.append(f"{first},{last}")
            else:
                parts.append(f"{first}-{last}")
        return ",".join(parts)


def _normalise(spans: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    spans.sort()
    merged: list[tuple[int, int]] = []
    for first, last in spans:
        if merged and first <= merged[-1][1] + 1:
            if last > merged[-1][1]:
                merged[-1] = (merged[-1][0], last)
        else:
            merged.append((first, last))
    return tuple(merged)


def completion_index(pod: Mapping[str, Any]) -> int | None:
    """The pod's completion index from its annotation (else its label); None if missing or invalid."""
    meta = pod.get("metadata") or {}
    raw = (meta.get("annotations") or {}).get(COMPLETION_INDEX_KEY)
    if raw is None:
        raw = (meta.get("labels") or {}).get(COMPLETION_INDEX_KEY)
    if raw is None:
        return None
    text = str(raw)
    if not text.isdigit() or (len(text) > 1 and text[0] == "0"):
        return None
    return int(text)


def valid_index(pod: Mapping[str, Any], completions: int) -> int | None:
    """The pod's completion index if it is in [0, completions), else None."""
    index = completion_index(pod)
    if index is None or index >= completions:
        return None
    return index


def first_pending_indexes(non_pending: Intervals, count: int, completions: int) -> list[int]:
    """The `count` lowest indexes in [0, completions) that are not in `non_pending`."""
    result: list[int] = []
    candidate = 0
    for first, last in non_pending.spans:
        while candidate < completions and len(result) < count and candidate < first:
            result.append(candidate)
            candidate += 1
        candidate = max(candidate, last + 1)
        if len(result) >= count or candidate >= completions:
            break
    while candidate < completions and len(result) < count:
        result.append(candidate)
        candidate += 1
    return result


def split_for_removal(
    pods: Iterable[dict[str, Any]],
    completions: int,
    sort_active: Callable[[list[dict[str, Any]]], list[dict[str, Any]]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Split active pods of an Indexed Job into (to_remove, to_keep).

    Pods with no valid index or an index >= completions are removed; of several pods sharing an index, the one
    that ranks last in ActivePods order (the most valuable) is kept and the others are removed.
    `sort_active` sorts a list of pods in ActivePods order (least valuable first).
    """
    by_index: dict[int, list[dict[str, Any]]] = {}
    remove: list[dict[str, Any]] = []
    for pod in pods:
        index = valid_index(pod, completions)
        if index is None:
            remove.append(pod)
        else:
            by_index.setdefault(index, []).append(pod)
    keep: list[dict[str, Any]] = []
    for index in sorted(by_index):
        group = by_index[index]
        if len(group) > 1:
            group = sort_active(group)
            remove.extend(group[:-1])
        keep.append(group[-1])
    return remove, keep


def pod_generate_name(job_name: str, index: int) -> str:
    """generateName for an indexed pod: "<job>-<index>-", the job name truncated to keep it ≤ 58 chars."""
    suffix = f"-{index}-"
    prefix = job_name + suffix
    if len(prefix) > 58:
        prefix = job_name[: 58 - len(suffix)] + suffix
    return prefix
