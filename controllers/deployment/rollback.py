"""The `deprecated.deployment.rollback.to` annotation (upstream: pkg/controller/deployment/rollback.go).

apps/v1 has no spec.rollbackTo, but the controller still honours the annotation: copy the template (and
the copyable annotations) of the ReplicaSet with that revision into the Deployment, drop the annotation,
update. 0 means the previous revision. `kubectl rollout undo` does not use this; it patches the template
itself, client-side.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controllers.common.podutil import Obj
from controllers.deployment.annotations import (
    ROLLBACK_TO,
    annotations_of,
    deployment_annotations_from,
    last_revision,
    revision,
)
from controllers.deployment.hashing import POD_TEMPLATE_HASH_LABEL, equal_ignore_hash
from controllers.deployment.rollout import Rollout, deep_copy

ROLLBACK_DONE = "DeploymentRollback"
ROLLBACK_REVISION_NOT_FOUND = "DeploymentRollbackRevisionNotFound"
ROLLBACK_TEMPLATE_UNCHANGED = "DeploymentRollbackTemplateUnchanged"


def rollback_to(d: Mapping[str, Any]) -> int | None:
    """The requested revision; None when absent or not a number (ignored, as upstream)."""
    value = annotations_of(d).get(ROLLBACK_TO)
    if not value:
        return None
    try:
        return int(value)
    except ValueError:
        return None


def template_without_hash(rs: Mapping[str, Any]) -> Obj:
    template = deep_copy((rs.get("spec") or {}).get("template") or {})
    labels = (template.get("metadata") or {}).get("labels")
    if labels:
        labels.pop(POD_TEMPLATE_HASH_LABEL, None)
    return template


async def rollback(r: Rollout) -> None:
    new_rs, old = await r.all_replicasets(create=True)
    all_rss = [*old, new_rs] if new_rs is not None else list(old)
    target = rollback_to(r.d) or 0
    if target == 0:
        target = last_revision(all_rss)
        if target == 0:
            r.event("Warning", ROLLBACK_REVISION_NOT_FOUND, "Unable to find last revision.")
            await clear_rollback_to(r)
            return
    for rs in all_rss:
        if revision(rs) == target:
            if await rollback_to_template(r, rs):
                r.event("Normal", ROLLBACK_DONE, f'Rolled back deployment "{r.name}" to revision {target}')
            return
    r.event("Warning", ROLLBACK_REVISION_NOT_FOUND, "Unable to find the revision to rollback to.")
    await clear_rollback_to(r)


async def rollback_to_template(r: Rollout, rs: Obj) -> bool:
    """Copy the ReplicaSet's template into the Deployment unless it is already the same; always clears the
    annotation. True when the template changed."""
    performed = False
    if not equal_ignore_hash(r.d["spec"].get("template") or {}, (rs.get("spec") or {}).get("template") or {}):
        r.d["spec"]["template"] = template_without_hash(rs)
        r.d["metadata"]["annotations"] = deployment_annotations_from(r.d, rs)
        performed = True
    else:
        msg = f'The rollback revision contains the same template as current deployment "{r.name}"'
        r.event("Warning", ROLLBACK_TEMPLATE_UNCHANGED, msg)
    await clear_rollback_to(r)
    return performed


async def clear_rollback_to(r: Rollout) -> None:
    annotations = r.d["metadata"].get("annotations") or {}
    annotations.pop(ROLLBACK_TO, None)
    r.d["metadata"]["annotations"] = annotations
    await r.update_deployment()
