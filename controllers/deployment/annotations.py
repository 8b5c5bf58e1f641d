"""The revision and replica annotations on Deployments and ReplicaSets (upstream:
pkg/controller/deployment/util/deployment_util.go `SetNewReplicaSetAnnotations`,
`copyDeploymentAnnotationsToReplicaSet`, `SetDeploymentAnnotationsTo`, `MaxRevision`, `LastRevision`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from controllers.common.podutil import meta

REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
ROLLBACK_TO = "deprecated.deployment.rollback.to"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
MAX_REVISION_HISTORY_CHARS = 2000

_SKIPPED = frozenset({LAST_APPLIED, REVISION, REVISION_HISTORY, DESIRED_REPLICAS, MAX_REPLICAS, ROLLBACK_TO})


def annotations_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    a: Mapping[str, str] = meta(obj).get("annotations") or {}
    return a


def revision(obj: Mapping[str, Any]) -> int | None:
    """The revision annotation as a number: 0 when absent, None when unparsable (such objects are skipped)."""
    value = annotations_of(obj).get(REVISION)
    if value is None:
        return 0
    try:
        return int(value)
    except ValueError:
        return None


def max_revision(rss: Iterable[Mapping[str, Any]]) -> int:
    return max((r for r in map(revision, rss) if r is not None), default=0)


def last_revision(rss: Iterable[Mapping[str, Any]]) -> int:
    """The second highest revision: what `rollback to 0` means."""
    top = second = 0
    for r in map(revision, rss):
        if r is None:
            continue
        if r >= top:
            top, second = r, top
        elif r > second:
            second = r
    return second


def int_annotation(obj: Mapping[str, Any], key: str) -> int | None:
    value = annotations_of(obj).get(key)
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        return None


def copy_deployment_annotations(deployment: Mapping[str, Any], rs_annotations: dict[str, str]) -> bool:
    """Copy the Deployment's annotations (all but the skipped ones) onto the ReplicaSet's; True if changed."""
    changed = False
    for k, v in annotations_of(deployment).items():
        if k in _SKIPPED or rs_annotations.get(k) == v:
            continue
        rs_annotations[k] = v
        changed = True
    return changed


def set_replicas_annotations(rs_annotations: dict[str, str], desired: int, max_replicas: int) -> bool:
    changed = False
    for key, value in ((DESIRED_REPLICAS, str(desired)), (MAX_REPLICAS, str(max_replicas))):
        if rs_annotations.get(key) != value:
            rs_annotations[key] = value
            changed = True
    return changed


def replicas_annotations_need_update(rs: Mapping[str, Any], desired: int, max_replicas: int) -> bool:
    a = annotations_of(rs)
    return a.get(DESIRED_REPLICAS) != str(desired) or a.get(MAX_REPLICAS) != str(max_replicas)


def set_new_rs_annotations(
    deployment: Mapping[str, Any],
    rs_annotations: dict[str, str],
    new_revision: int,
    exists: bool,
    replicas: int,
    max_surge: int,
) -> bool:
    """Annotate the new ReplicaSet: copied Deployment annotations, its revision raised to `new_revision`
    (the overwritten number goes to the revision history: a rollback), and for a ReplicaSet about to be
    created the desired/max replicas. True when anything changed."""
    changed = copy_deployment_annotations(deployment, rs_annotations)
    old_value = rs_annotations.get(REVISION)
    try:
        old_revision = int(old_value) if old_value else 0
    except ValueError:
        return False  # a ReplicaSet whose revision is not a number is left as it is, as upstream
    if old_revision < new_revision:
        rs_annotations[REVISION] = str(new_revision)
        changed = True
        if old_value is not None:
            history = [h for h in rs_annotations.get(REVISION_HISTORY, "").split(",") if h]
            history.append(old_value)
            while len(history) > 1 and len(",".join(history)) > MAX_REVISION_HISTORY_CHARS:
                history.pop(0)  # the oldest goes first
            rs_annotations[REVISION_HISTORY] = ",".join(history)
    if not exists and set_replicas_annotations(rs_annotations, replicas, replicas + max_surge):
        changed = True
    return changed


def deployment_annotations_from(deployment: Mapping[str, Any], rs: Mapping[str, Any]) -> dict[str, str]:
    """A rollback's Deployment annotations: its own skipped ones, plus the ReplicaSet's copyable ones."""
    out = {k: v for k, v in annotations_of(deployment).items() if k in _SKIPPED}
    out.update({k: v for k, v in annotations_of(rs).items() if k not in _SKIPPED})
    return out
