"""The rollout strategies and the scaling path (upstream: pkg/controller/deployment/rolling.go
`rolloutRolling`, `reconcileNewReplicaSet`, `reconcileOldReplicaSets`, `cleanupUnhealthyReplicas`,
`scaleDownOldReplicaSetsForRollingUpdate`; recreate.go `rolloutRecreate`, `oldPodsRunning`; sync.go `sync`,
`scale`, `isScalingEvent`)."""

from __future__ import annotations

from collections.abc import Sequence

from controllers.common.podutil import Obj, meta, pod_phase
from controllers.deployment.annotations import DESIRED_REPLICAS, int_annotation
from controllers.deployment.conditions import deployment_complete
from controllers.deployment.history import cleanup
from controllers.deployment.replicas import (
    ROLLING_UPDATE,
    active,
    active_or_latest,
    by_creation,
    is_saturated,
    max_unavailable,
    new_rs_new_replicas,
    proportional_sizes,
    rs_replicas,
    settled_available,
    spec_replicas,
    status_replicas,
    strategy_type,
    sum_spec,
)
from controllers.deployment.rollout import Rollout


# ---------------------------------------------------------------------- RollingUpdate
async def rollout_rolling(r: Rollout) -> None:
    new_rs, old = await r.all_replicasets(create=True)
    assert new_rs is not None
    all_rss = [*old, new_rs]
    if await reconcile_new(r, all_rss, new_rs):
        await r.sync_rollout_status(r.rs_list, r.find_new())
        return
    if await reconcile_old(r, all_rss, active(old), new_rs):
        await r.sync_rollout_status(r.rs_list, r.find_new())
        return
    if deployment_complete(r.d, r.status):
        await cleanup(r, old)
    await r.sync_rollout_status(all_rss, new_rs)


async def reconcile_new(r: Rollout, all_rss: list[Obj], new_rs: Obj) -> bool:
    replicas = spec_replicas(r.d)
    size = rs_replicas(new_rs)
    if size == replicas:
        return False
    if size > replicas:
        return (await r.scale_rs_and_record(new_rs, replicas))[0]
    return (await r.scale_rs_and_record(new_rs, new_rs_new_replicas(r.d, all_rss, size)))[0]


def scale_down_budget(d: Obj, all_rss: Sequence[Obj], new_rs: Obj) -> int:
    """How many old replicas may go now without breaking maxUnavailable, not counting the new ReplicaSet's
    own unavailable pods as available."""
    min_available = spec_replicas(d) - max_unavailable(d)
    new_unavailable = rs_replicas(new_rs) - settled_available(new_rs)
    return sum_spec(all_rss) - min_available - new_unavailable


def plan_cleanup_unhealthy(old: Sequence[Obj], budget: int) -> list[tuple[Obj, int]]:
    """Old ReplicaSets oldest first, each shrunk by its unavailable replicas within `budget`."""
    plan: list[tuple[Obj, int]] = []
    total = 0
    for rs in by_creation(old):
        if total >= budget:
            break
        size = rs_replicas(rs)
        if size == 0 or size == settled_available(rs):
            continue
        down = min(budget - total, size - settled_available(rs))
        plan.append((rs, size - down))
        total += down
    return plan


def plan_scale_down_old(d: Obj, all_rss: Sequence[Obj], old: Sequence[Obj]) -> list[tuple[Obj, int]]:
    """Available replicas beyond minAvailable are taken from the oldest ReplicaSets first (not
    proportionally)."""
    min_available = spec_replicas(d) - max_unavailable(d)
    avail = sum(settled_available(rs) for rs in all_rss)
    if avail <= min_available:
        return []
    wanted = avail - min_available
    plan: list[tuple[Obj, int]] = []
    total = 0
    for rs in by_creation(old):
        if total >= wanted:
            break
        size = rs_replicas(rs)
        if size == 0:
            continue
        down = min(size, wanted - total)
        plan.append((rs, size - down))
        total += down
    return plan


async def reconcile_old(r: Rollout, all_rss: list[Obj], old: list[Obj], new_rs: Obj) -> bool:
    if sum_spec(old) == 0:
        return False
    budget = scale_down_budget(r.d, all_rss, new_rs)
    if budget <= 0:
        return False
    scaled_down = 0
    shrunk: dict[int, Obj] = {}
    for rs, size in plan_cleanup_unhealthy(old, budget):
        down = rs_replicas(rs) - size
        _, written = await r.scale_rs_and_record(rs, size)
        shrunk[id(rs)] = written
        scaled_down += down
    old = [shrunk.get(id(rs), rs) for rs in old]
    for rs, size in plan_scale_down_old(r.d, [*old, new_rs], old):
        scaled_down += rs_replicas(rs) - size
        await r.scale_rs_and_record(rs, size)
    return scaled_down > 0


# ---------------------------------------------------------------------- Recreate
async def rollout_recreate(r: Rollout) -> None:
    new_rs, old = await r.all_replicasets(create=False)
    all_rss = [*old, new_rs] if new_rs is not None else list(old)
    scaled = False
    for rs in active(old):
        if (await r.scale_rs_and_record(rs, 0))[0]:
            scaled = True
    if scaled or old_pods_running(r, new_rs, old):
        await r.sync_rollout_status(r.rs_list if scaled else all_rss, new_rs)
        return
    if new_rs is None:
        new_rs, old = await r.all_replicasets(create=True)
        assert new_rs is not None
    _, new_rs = await r.scale_rs_and_record(new_rs, spec_replicas(r.d))
    if deployment_complete(r.d, r.status):
        await cleanup(r, old)
    await r.sync_rollout_status([*old, new_rs], new_rs)


def old_pods_running(r: Rollout, new_rs: Obj | None, old: Sequence[Obj]) -> bool:
    """Old ReplicaSets still report pods, or one of their pods is not Succeeded/Failed (terminating pods
    count: Recreate never overlaps)."""
    if sum(status_replicas(rs) for rs in old) > 0:
        return True
    new_uid = meta(new_rs).get("uid") if new_rs is not None else None
    for rs in r.rs_list:
        if meta(rs).get("uid") == new_uid:
            continue
        for pod in r.ctl.pods_of(r.d, rs):
            if pod_phase(pod) not in ("Succeeded", "Failed"):
                return True
    return False


# ---------------------------------------------------------------------- scaling (resize, paused)
async def is_scaling_event(r: Rollout) -> bool:
    new_rs, old = await r.all_replicasets(create=False)
    replicas = spec_replicas(r.d)
    for rs in active([*old, new_rs]):
        desired = int_annotation(rs, DESIRED_REPLICAS)
        if desired is not None and desired != replicas:
            return True
    return False


async def sync_scaling(r: Rollout, rolling_back: bool) -> None:
    """`sync`: scale for a resize (and a paused Deployment), clean up history when paused, write status."""
    new_rs, old = await r.all_replicasets(create=False)
    await scale(r, new_rs, old)
    new_rs, old = r.find_new(), r.old_replicasets(r.find_new())
    if r.d["spec"].get("paused") and not rolling_back:
        await cleanup(r, old)
    all_rss = [*old, new_rs] if new_rs is not None else list(old)
    await r.sync_deployment_status(all_rss, new_rs)


async def scale(r: Rollout, new_rs: Obj | None, old: list[Obj]) -> None:
    replicas = spec_replicas(r.d)
    target = active_or_latest(new_rs, old)
    if target is not None:
        if rs_replicas(target) != replicas:
            await r.scale_rs_and_record(target, replicas)
        return
    if is_saturated(r.d, new_rs):
        for rs in active(old):
            await r.scale_rs_and_record(rs, 0)
        return
    if strategy_type(r.d) != ROLLING_UPDATE:
        return
    for rs, size in proportional_sizes(r.d, active([*old, new_rs])):
        await r.scale_rs(rs, size)
