"""Which pods a controller deletes first (reference §1.14 and §2.3).

- `sort_active_pods(pods)`: the Job controller's order (controller.ActivePods): no deletion cost, no node
  rank, no logarithmic buckets.
- `sort_active_pods_with_ranks(pods, ranks, now)`: the ReplicaSet controller's order (ActivePodsWithRanks)
  with pod-deletion-cost, co-located rank, logarithmic age buckets and UID tie-breaks.
- `rank_by_related_pods_on_same_node(pods, related)`: the co-located rank of each pod.

All sorts return a new list, first element = delete first; they never mutate their inputs. Times are epoch
seconds; `now=None` means the zero time (plain "newer first" comparisons, as when Now is unset upstream).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from functools import cmp_to_key
from typing import Any, NamedTuple

from controllers.common.podutil import (
    DELETION_COST_ANNOTATION,
    Obj,
    is_active,
    is_ready,
    max_container_restarts,
    meta,
    node_name,
    parse_time,
    pod_phase,
    ready_since,
)

_PHASE_ORDINAL = {"Pending": 0, "Unknown": 1, "Running": 2}
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def deletion_cost(pod: Mapping[str, Any]) -> int:
    """The int32 `controller.kubernetes.io/pod-deletion-cost`; missing or invalid → 0.

    A leading `+` or a leading zero (other than "0" itself) is invalid; a leading `-` is accepted."""
    value = (meta(pod).get("annotations") or {}).get(DELETION_COST_ANNOTATION)
    if not isinstance(value, str) or not value:
        return 0
    first = value[0]
    if not (first == "-" or value == "0" or "1" <= first <= "9"):
        return 0
    digits = value[1:] if first == "-" else value
    if not digits or not digits.isascii() or not digits.isdigit():
        return 0
    cost = int(value)
    return cost if _INT32_MIN <= cost <= _INT32_MAX else 0


# -------------------------------------------------------------------- Job order (controller.ActivePods)


def _time_key(t: float | None) -> tuple[int, float]:
    """Zero time first, then newer (later) first."""
    return (0, 0.0) if t is None else (1, -t)


def active_pods_key(pod: Mapping[str, Any]) -> tuple[Any, ...]:
    """Sort key of controller.ActivePods (smaller = delete first)."""
    ready = is_ready(pod)
    regular, sidecar = max_container_restarts(pod)
    return (
        1 if node_name(pod) else 0,
        _PHASE_ORDINAL.get(pod_phase(pod), 0),
        1 if ready else 0,
        _time_key(ready_since(pod)) if ready else (0, 0.0),
        -regular,
        -sidecar,
        _time_key(parse_time(meta(pod).get("creationTimestamp"))),
    )


def sort_active_pods(pods: Iterable[Obj]) -> list[Obj]:
    return sorted(pods, key=active_pods_key)


# -------------------------------------------------------------------- ReplicaSet order (ActivePodsWithRanks)


class _Features(NamedTuple):
    prefix: tuple[int, int, int, int, int]  # rules 1-5 ascending: assigned, phase, ready, cost, -rank
    ready: bool
    ready_time: float | None
    ready_bucket: int
    restarts: tuple[int, int]  # negated: more restarts sort first
    created: float | None
    created_bucket: int
    uid: str


def _features(pod: Mapping[str, Any], rank: int, now: float | None) -> _Features:
    ready = is_ready(pod)
    ready_time = ready_since(pod) if ready else None
    created = parse_time(meta(pod).get("creationTimestamp"))
    regular, sidecar = max_container_restarts(pod)
    return _Features(
        prefix=(
            1 if node_name(pod) else 0,
            _PHASE_ORDINAL.get(pod_phase(pod), 0),
            1 if ready else 0,
            deletion_cost(pod),
            -rank,
        ),
        ready=ready,
        ready_time=ready_time,
        ready_bucket=log_bucket(ready_time, now) if ready_time is not None and now is not None else -1,
        restarts=(-regular, -sidecar),
        created=created,
        created_bucket=log_bucket(created, now) if created is not None and now is not None else -1,
        uid=str(meta(pod).get("uid") or ""),
    )


def log_bucket(t: float, now: float) -> int:
    """floor(log2(now - t)) with the difference in nanoseconds; -1 when t is not in the past."""
    delta_ns = round((now - t) * 1e9)
    return delta_ns.bit_length() - 1 if delta_ns > 0 else -1


def _compare_times(
    a: _Features, b: _Features, ta: float | None, tb: float | None, bucket_a: int, bucket_b: int, timed: bool
) -> int:
    """Zero first, then newer first; with a clock, times in the same log2 bucket are ordered by UID."""
    if ta is None or tb is None:
        return -1 if ta is None else 1
    if not timed:
        return -1 if ta > tb else 1
    if bucket_a == bucket_b:
        return -1 if a.uid < b.uid else (1 if b.uid < a.uid else 0)
    return -1 if bucket_a < bucket_b else 1


def _compare_ranked(a: _Features, b: _Features, timed: bool) -> int:
    if a.prefix != b.prefix:
        return -1 if a.prefix < b.prefix else 1
    if a.ready and a.ready_time != b.ready_time:  # rule 3 made both ready or both not
        return _compare_times(a, b, a.ready_time, b.ready_time, a.ready_bucket, b.ready_bucket, timed)
    if a.restarts != b.restarts:
        return -1 if a.restarts < b.restarts else 1
    if a.created != b.created:
        return _compare_times(a, b, a.created, b.created, a.created_bucket, b.created_bucket, timed)
    return 0


def sort_active_pods_with_ranks(pods: Sequence[Obj], ranks: Sequence[int], now: float | None) -> list[Obj]:
    """Order `pods` for deletion; `ranks[i]` is the co-located rank of `pods[i]`."""
    if len(pods) != len(ranks):
        raise ValueError("pods and ranks must have the same length")
    timed = now is not None
    decorated = [(_features(p, r, now), p) for p, r in zip(pods, ranks, strict=True)]

    def compare(x: tuple[_Features, Obj], y: tuple[_Features, Obj]) -> int:
        return _compare_ranked(x[0], y[0], timed)

    decorated.sort(key=cmp_to_key(compare))
    return [p for _, p in decorated]


def rank_by_related_pods_on_same_node(pods: Sequence[Obj], related: Iterable[Mapping[str, Any]]) -> list[int]:
    """For each pod, the number of active related pods on its node (unassigned pods share the node "")."""
    per_node = Counter(node_name(p) for p in related if is_active(p))
    return [per_node[node_name(p)] for p in pods]


def deletion_age_ratios(pods: Sequence[Mapping[str, Any]], chosen: int, now: float) -> list[float]:
    """For each ready pod among the first `chosen`, its age divided by the youngest ready pod's age, both in
    whole milliseconds, integer division (what replicaset_controller_sorting_deletion_age_ratio observes)."""
    youngest: float | None = None
    for pod in pods:
        created = parse_time(meta(pod).get("creationTimestamp"))
        if created is not None and is_ready(pod) and (youngest is None or created > youngest):
            youngest = created
    youngest_ms = math.floor((now - youngest) * 1000) if youngest is not None else math.floor(now * 1000)
    ratios = []
    for pod in pods[:chosen]:
        if not is_ready(pod) or youngest_ms <= 0:
            continue
        created = parse_time(meta(pod).get("creationTimestamp")) or 0.0
        ratios.append(float(math.floor((now - created) * 1000) // youngest_ms))
    return ratios
