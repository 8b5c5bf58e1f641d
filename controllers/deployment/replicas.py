"""Replica arithmetic of a Deployment (upstream: pkg/controller/deployment/util/deployment_util.go
`ResolveFenceposts`, `MaxSurge`, `MaxUnavailable`, `NewRSNewReplicas`, `IsSaturated`, `GetProportion`,
`FindActiveOrLatest`; pkg/controller/controller_utils.go ReplicaSet sort orders).

Pure functions on raw Deployment and ReplicaSet dicts; nothing here mutates its inputs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from controllers.common.podutil import Obj, meta, parse_time
from controllers.deployment.annotations import DESIRED_REPLICAS, MAX_REPLICAS, int_annotation

RECREATE = "Recreate"
ROLLING_UPDATE = "RollingUpdate"


class FencepostError(ValueError):
    """maxSurge or maxUnavailable is neither an integer nor a percentage."""


def spec_replicas(obj: Mapping[str, Any]) -> int:
    value = (obj.get("spec") or {}).get("replicas")
    return 1 if value is None else int(value)


def rs_replicas(rs: Mapping[str, Any]) -> int:
    return int((rs.get("spec") or {}).get("replicas") or 0)


def _status(rs: Mapping[str, Any], field: str) -> int:
    return int((rs.get("status") or {}).get(field) or 0)


def status_replicas(rs: Mapping[str, Any]) -> int:
    return _status(rs, "replicas")


def available(rs: Mapping[str, Any]) -> int:
    return _status(rs, "availableReplicas")


def ready(rs: Mapping[str, Any]) -> int:
    return _status(rs, "readyReplicas")


def settled_available(rs: Mapping[str, Any]) -> int:
    """Available replicas never counted above the size: a ReplicaSet just scaled down may still report pods
    its controller is deleting as available (upstream counts status alone)."""
    return min(rs_replicas(rs), available(rs))


def settled_size(rs: Mapping[str, Any]) -> int:
    """The larger of the size and the pods the ReplicaSet still reports: pods of a ReplicaSet just scaled
    down count until its controller has deleted them (upstream counts spec alone)."""
    return max(rs_replicas(rs), status_replicas(rs))


def sum_spec(rss: Iterable[Mapping[str, Any] | None]) -> int:
    return sum(rs_replicas(rs) for rs in rss if rs is not None)


def sum_status(rss: Iterable[Mapping[str, Any] | None], field: str) -> int:
    return sum(_status(rs, field) for rs in rss if rs is not None)


def active(rss: Iterable[Obj | None]) -> list[Obj]:
    """ReplicaSets with spec.replicas > 0 (FilterActiveReplicaSets)."""
    return [rs for rs in rss if rs is not None and rs_replicas(rs) > 0]


def strategy_type(d: Mapping[str, Any]) -> str:
    return str(((d.get("spec") or {}).get("strategy") or {}).get("type") or ROLLING_UPDATE)


def scaled_value(value: int | str | None, total: int, round_up: bool) -> int:
    """intstr.GetScaledValueFromIntOrPercent: an int as is, `N%` of `total` rounded up or down."""
    if value is None:
        return 0
    if isinstance(value, bool):
        raise FencepostError(f"invalid value for IntOrString: {value!r}")
    if isinstance(value, int):
        return value
    text = str(value)
    if not text.endswith("%"):
        raise FencepostError("invalid value for IntOrString: invalid type: string is not a percentage")
    try:
        percent = int(text[:-1])
    except ValueError as exc:
        raise FencepostError(f"invalid value for IntOrString: {text!r}") from exc
    product = percent * total
    return -(-product // 100) if round_up else product // 100


def resolve_fenceposts(d: Mapping[str, Any]) -> tuple[int, int]:
    """(maxSurge, maxUnavailable) in pods: surge rounds up, unavailable down; both 0 → unavailable 1 (surge
    might be impossible, e.g. under a quota)."""
    rolling = ((d.get("spec") or {}).get("strategy") or {}).get("rollingUpdate") or {}
    replicas = spec_replicas(d)
    surge = scaled_value(rolling.get("maxSurge"), replicas, True)
    unavailable = scaled_value(rolling.get("maxUnavailable"), replicas, False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def max_surge(d: Mapping[str, Any]) -> int:
    if strategy_type(d) != ROLLING_UPDATE:
        return 0
    return resolve_fenceposts(d)[0]


def max_unavailable(d: Mapping[str, Any]) -> int:
    replicas = spec_replicas(d)
    if strategy_type(d) != ROLLING_UPDATE or replicas == 0:
        return 0
    return min(resolve_fenceposts(d)[1], replicas)


def min_available(d: Mapping[str, Any]) -> int:
    if strategy_type(d) != ROLLING_UPDATE:
        return 0
    return spec_replicas(d) - max_unavailable(d)


def new_rs_new_replicas(d: Mapping[str, Any], all_rss: Sequence[Mapping[str, Any]], new_rs_size: int) -> int:
    """How big the new ReplicaSet may be now: RollingUpdate grows it within replicas + maxSurge pods in all
    ReplicaSets (never beyond replicas); Recreate makes it full size at once. Pods not yet deleted from
    ReplicaSets scaled down count (settled_size), so the surge bound holds for pods, not just sizes."""
    replicas = spec_replicas(d)
    if strategy_type(d) == RECREATE:
        return replicas
    surge = scaled_value(
        (((d.get("spec") or {}).get("strategy") or {}).get("rollingUpdate") or {}).get("maxSurge"),
        replicas,
        True,
    )
    current = sum(settled_size(rs) for rs in all_rss)
    max_total = replicas + surge
    if current >= max_total:
        return new_rs_size
    return new_rs_size + min(max_total - current, replicas - new_rs_size)


def is_saturated(d: Mapping[str, Any], new_rs: Mapping[str, Any] | None) -> bool:
    """The new ReplicaSet runs the Deployment's full size, and all of it is available."""
    if new_rs is None:
        return False
    replicas = spec_replicas(d)
    return (
        rs_replicas(new_rs) == replicas
        and int_annotation(new_rs, DESIRED_REPLICAS) == replicas
        and available(new_rs) == replicas
    )


# -------------------- orders


def _created(rs: Mapping[str, Any]) -> float:
    return parse_time(meta(rs).get("creationTimestamp")) or 0.0


def by_creation(rss: Iterable[Obj]) -> list[Obj]:
    """Oldest first, then by name (ReplicaSetsByCreationTimestamp)."""
    return sorted(rss, key=lambda rs: (_created(rs), str(meta(rs).get("name"))))


def by_size_newer(rss: Iterable[Obj]) -> list[Obj]:
    """Largest first; ties newer first (ReplicaSetsBySizeNewer)."""
    newest_first = sorted(rss, key=lambda rs: (_created(rs), str(meta(rs).get("name"))), reverse=True)
    return sorted(newest_first, key=rs_replicas, reverse=True)


def by_size_older(rss: Iterable[Obj]) -> list[Obj]:
    """Largest first; ties older first (ReplicaSetsBySizeOlder)."""
    return sorted(by_creation(rss), key=rs_replicas, reverse=True)


# -------------------- proportional scaling


def active_or_latest(new_rs: Obj | None, old_rss: Sequence[Obj]) -> Obj | None:
    """The only active ReplicaSet, or the newest one when none is active; None when several are active."""
    if new_rs is None and not old_rss:
        return None
    newest_first = list(reversed(by_creation(old_rss)))
    candidates = active([*newest_first, new_rs])
    if not candidates:
        return new_rs if new_rs is not None else newest_first[0]
    return candidates[0] if len(candidates) == 1 else None


def _round_half_away(x: float) -> int:
    return int(x + 0.5) if x >= 0 else -int(-x + 0.5)


def rs_fraction(rs: Mapping[str, Any], d: Mapping[str, Any], status_total: int) -> int:
    """How many replicas the ReplicaSet gains (or loses) when the Deployment's allowed size changes."""
    replicas = spec_replicas(d)
    size = rs_replicas(rs)
    if replicas == 0:
        return -size
    allowed = replicas + max_surge(d)
    annotated = int_annotation(rs, MAX_REPLICAS)
    if not annotated:  # missing or 0: fall back to the Deployment's current size
        annotated = status_total
    if not annotated:
        return 0  # nothing to scale from (upstream would divide by zero)
    return _round_half_away(size * allowed / annotated) - size


def proportion(
    rs: Mapping[str, Any], d: Mapping[str, Any], to_add: int, added: int, status_total: int
) -> int:
    """GetProportion: the ReplicaSet's share, bounded by what is still left to add (or remove)."""
    if rs_replicas(rs) == 0 or to_add == 0 or to_add == added:
        return 0
    fraction = rs_fraction(rs, d, status_total)
    left = to_add - added
    return min(fraction, left) if to_add > 0 else max(fraction, left)


def proportional_sizes(d: Mapping[str, Any], rss: Sequence[Obj]) -> list[tuple[Obj, int]]:
    """New sizes of the active ReplicaSets of a RollingUpdate Deployment resized mid-rollout, in the order
    they are written: shares proportional to the max-replicas annotation, the leftover to the first
    (largest) one."""
    replicas = spec_replicas(d)
    allowed = replicas + max_surge(d) if replicas > 0 else 0
    to_add = allowed - sum_spec(rss)
    if to_add > 0:
        ordered = by_size_newer(rss)
    elif to_add < 0:
        ordered = by_size_older(rss)
    else:
        ordered = list(rss)
    status_total = int((d.get("status") or {}).get("replicas") or 0)
    added = 0
    sizes: list[int] = []
    for rs in ordered:
        share = proportion(rs, d, to_add, added, status_total) if to_add else 0
        sizes.append(rs_replicas(rs) + share)
        added += share
    if ordered and to_add:
        sizes[0] = max(0, sizes[0] + to_add - added)
    return list(zip(ordered, sizes, strict=True))
