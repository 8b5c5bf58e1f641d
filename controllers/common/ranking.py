"""Which pods a controller deletes first (upstream: pkg/controller/controller_utils.go `ActivePods` and
`ActivePodsWithRanks`; pkg/controller/replicaset/replica_set.go `getPodsToDelete`,
`getPodsRankedByRelatedPodsOnSameNode`).

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
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cmp_to_key
from typing import Any

from controllers.common.objectmemo import ObjectMemo
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


# What ranks a pod apart from its co-located rank and the clock: (assigned, phase ordinal, ready, deletion
# cost, ready time, negated restarts, created, uid).
_Static = tuple[int, int, bool, int, float | None, tuple[int, int], float | None, str]

# One pod's place in the order, flat so the comparison reads it by index: (rules 1-5 ascending: assigned,
# phase, ready, cost, -rank), ready, ready time, its log2 bucket, (negated restarts), created, its bucket,
# uid, the pod. A flat tuple with one comparison function is much cheaper than a NamedTuple read through
# properties by nested functions, and the sort compares ~n log n pairs of thousands of pods.
_Features = tuple[
    tuple[int, int, int, int, int], bool, float | None, int, tuple[int, int], float | None, int, str, Obj
]


def _static(pod: Obj) -> _Static:
    # One pass over the pod: the first Ready condition gives both readiness and its transition time.
    metadata = pod.get("metadata") or {}
    status = pod.get("status") or {}
    ready = False
    ready_time: float | None = None
    for cond in status.get("conditions") or ():
        if cond.get("type") == "Ready":
            if cond.get("status") == "True":
                ready = True
                ready_time = parse_time(cond.get("lastTransitionTime"))
            break
    regular = max((int(c.get("restartCount") or 0) for c in status.get("containerStatuses") or ()), default=0)
    # Sidecar restarts only exist with init container statuses (max_container_restarts' second half).
    sidecar = max_container_restarts(pod)[1] if status.get("initContainerStatuses") else 0
    return (
        1 if (pod.get("spec") or {}).get("nodeName") else 0,
        _PHASE_ORDINAL.get(str(status.get("phase") or ""), 0),
        ready,
        deletion_cost(pod),
        ready_time,
        (-regular, -sidecar),
        parse_time(metadata.get("creationTimestamp")),
        str(metadata.get("uid") or ""),
    )


class RankingCache:
    """The clock-free ranking facts of each pod, remembered per pod dict (ObjectMemo) between sorts: a
    ReplicaSet scaling down by thousands ranks nearly the same pods on every sync."""

    def __init__(self) -> None:
        self._memo: ObjectMemo[_Static] = ObjectMemo()

    def facts(self, pods: Iterable[Obj]) -> list[_Static]:
        return self._memo.derive(pods, _static)


def _statics(pods: Sequence[Obj], cache: RankingCache | None) -> list[_Static]:
    return cache.facts(pods) if cache is not None else [_static(p) for p in pods]


def _features(static: _Static, pod: Obj, rank: int, bucket: Callable[[float | None], int]) -> _Features:
    assigned, phase, ready, cost, ready_time, restarts, created, uid = static
    return (
        (assigned, phase, 1 if ready else 0, cost, -rank),
        ready,
        ready_time,
        bucket(ready_time),
        restarts,
        created,
        bucket(created),
        uid,
        pod,
    )


def _bucketer(now: float | None) -> Callable[[float | None], int]:
    """log_bucket(t, now), or -1 without a time or a clock; computed once per distinct time, since pods
    created or made ready within one second share their (second-precision) timestamps."""
    memo: dict[float, int] = {}

    def bucket(t: float | None) -> int:
        if t is None or now is None:
            return -1
        known = memo.get(t)
        if known is None:
            known = memo[t] = log_bucket(t, now)
        return known

    return bucket


def log_bucket(t: float, now: float) -> int:
    """floor(log2(now - t)) with the difference in nanoseconds; -1 when t is not in the past."""
    delta_ns = round((now - t) * 1e9)
    return delta_ns.bit_length() - 1 if delta_ns > 0 else -1


def _compare_times(
    ta: float | None, tb: float | None, bucket_a: int, bucket_b: int, uid_a: str, uid_b: str, timed: bool
) -> int:
    """Two differing times: zero first, then newer first; with a clock, times in the same log2 bucket are
    ordered by UID."""
    if ta is None or tb is None:
        return -1 if ta is None else 1
    if not timed:
        return -1 if ta > tb else 1
    if bucket_a == bucket_b:
        return -1 if uid_a < uid_b else (1 if uid_b < uid_a else 0)
    return -1 if bucket_a < bucket_b else 1


def _comparator(timed: bool) -> Callable[[_Features, _Features], int]:
    def compare(a: _Features, b: _Features) -> int:
        if a[0] != b[0]:
            return -1 if a[0] < b[0] else 1
        if a[1] and a[2] != b[2]:  # rule 3 made both ready or both not
            return _compare_times(a[2], b[2], a[3], b[3], a[7], b[7], timed)
        if a[4] != b[4]:
            return -1 if a[4] < b[4] else 1
        if a[5] != b[5]:
            return _compare_times(a[5], b[5], a[6], b[6], a[7], b[7], timed)
        return 0

    return compare


def sort_active_pods_with_ranks(
    pods: Sequence[Obj], ranks: Sequence[int], now: float | None, cache: RankingCache | None = None
) -> list[Obj]:
    """Order `pods` for deletion; `ranks[i]` is the co-located rank of `pods[i]`."""
    if len(pods) != len(ranks):
        raise ValueError("pods and ranks must have the same length")
    statics = _statics(pods, cache)
    bucket = _bucketer(now)
    decorated = [_features(s, p, r, bucket) for s, p, r in zip(statics, pods, ranks, strict=True)]
    decorated.sort(key=cmp_to_key(_comparator(now is not None)))
    return [f[8] for f in decorated]


def rank_by_related_pods_on_same_node(pods: Sequence[Obj], related: Iterable[Mapping[str, Any]]) -> list[int]:
    """For each pod, the number of active related pods on its node (unassigned pods share the node "")."""
    per_node = Counter(node_name(p) for p in related if is_active(p))
    if not per_node:
        return [0] * len(pods)  # nothing related is active (e.g. no owning Deployment): every rank is 0
    return [per_node[node_name(p)] for p in pods]


def deletion_age_ratios(
    pods: Sequence[Obj], chosen: int, now: float, cache: RankingCache | None = None
) -> list[float]:
    """For each ready pod among the first `chosen`, its age divided by the youngest ready pod's age, both in
    whole milliseconds, integer division (what replicaset_controller_sorting_deletion_age_ratio observes)."""
    if cache is not None:
        facts = [(s[2], s[6]) for s in cache.facts(pods)]
    else:
        facts = [(is_ready(p), parse_time(meta(p).get("creationTimestamp"))) for p in pods]
    youngest: float | None = None
    for ready, created in facts:
        if created is not None and ready and (youngest is None or created > youngest):
            youngest = created
    youngest_ms = math.floor((now - youngest) * 1000) if youngest is not None else math.floor(now * 1000)
    ratios = []
    for ready, created in facts[:chosen]:
        if not ready or youngest_ms <= 0:
            continue
        ratios.append(float(math.floor((now - (created or 0.0)) * 1000) // youngest_ms))
    return ratios
