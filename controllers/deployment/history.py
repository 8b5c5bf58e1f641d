"""Rollout history cleanup (upstream: pkg/controller/deployment/sync.go `cleanupDeployment`)."""

from __future__ import annotations

import contextlib

from controllers.common.podutil import Obj, is_terminating, meta
from controllers.deployment.annotations import revision
from controllers.deployment.conditions import has_revision_history_limit
from controllers.deployment.replicas import by_creation, rs_replicas, status_replicas
from controllers.deployment.rollout import Rollout
from manager import REPLICASETS, NotFound


def history_to_delete(d: Obj, old: list[Obj]) -> list[Obj]:
    """Old ReplicaSets beyond revisionHistoryLimit, lowest revision (then oldest) first, among those not
    being deleted; only fully scaled-down ones whose controller has seen their latest spec qualify."""
    if not has_revision_history_limit(d):
        return []
    alive = [rs for rs in old if not is_terminating(rs)]
    excess = len(alive) - int(d["spec"]["revisionHistoryLimit"])
    if excess <= 0:
        return []
    ordered = sorted(by_creation(alive), key=lambda rs: revision(rs) or 0)
    return [
        rs
        for rs in ordered[:excess]
        if status_replicas(rs) == 0
        and rs_replicas(rs) == 0
        and int(meta(rs).get("generation") or 0)
        <= int((rs.get("status") or {}).get("observedGeneration") or 0)
    ]


async def cleanup(r: Rollout, old: list[Obj]) -> None:
    for rs in history_to_delete(r.d, old):
        with contextlib.suppress(NotFound):
            await r.ctl.client.delete(REPLICASETS, str(meta(rs)["name"]), r.namespace)
