"""The garbage-collector finalizers a DELETE adds or drops, as the generic registry decides them
(store.go `deletionFinalizersForGarbageCollection`): DeleteOptions first (orphanDependents, then
propagationPolicy), then a GC finalizer already on the object, then the resource's default policy.
kubesim only marks the object; the manager's garbage collector does the cascading."""

from __future__ import annotations

from typing import Any

from kubesim.resources.types import ResourceType

JSON = dict[str, Any]
FOREGROUND, ORPHAN = "foregroundDeletion", "orphan"
ORPHAN_DEPENDENTS, DELETE_DEPENDENTS, UNSUPPORTED = "OrphanDependents", "DeleteDependents", "Unsupported"
# Served group/version/resource whose strategy defaults to orphaning, for backward compatibility (batch/v1
# Jobs, v1 ReplicationControllers); apps/v1, batch/v1 CronJobs and custom resources delete dependents.
_ORPHAN_BY_DEFAULT = frozenset({("batch", "v1", "jobs"), ("", "v1", "replicationcontrollers")})
# Events take no part in garbage collection: their strategy answers rest.Unsupported.
_UNSUPPORTED = frozenset({("", "events"), ("events.k8s.io", "events")})
JOB_DELETE_WARNING = (
    "child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to remove "
    "them or set propagationPolicy=Orphan to suppress this warning"
)


def default_policy(rtype: ResourceType) -> str:
    if (rtype.group, rtype.plural) in _UNSUPPORTED:
        return UNSUPPORTED
    if (rtype.group, rtype.version, rtype.plural) in _ORPHAN_BY_DEFAULT:
        return ORPHAN_DEPENDENTS
    return DELETE_DEPENDENTS


def delete_warning(rtype: ResourceType, options: JSON) -> str | None:
    """The warning the Job registry adds to a DELETE (or DELETECOLLECTION) that names no policy."""
    if options.get("propagationPolicy") is not None or options.get("orphanDependents") is not None:
        return None
    if rtype.group == "batch" and rtype.plural == "jobs" and default_policy(rtype) == ORPHAN_DEPENDENTS:
        return JOB_DELETE_WARNING
    return None


def _explicit(options: JSON) -> str | None:
    """The policy the request names: orphanDependents before propagationPolicy (never both: 422)."""
    orphan = options.get("orphanDependents")
    if orphan is not None:
        return "Orphan" if orphan else "Background"
    policy = options.get("propagationPolicy")
    return str(policy) if policy is not None else None


def _should_orphan(default: str, finalizers: list[str], options: JSON) -> bool:
    if default == UNSUPPORTED:
        return False
    explicit = _explicit(options)
    if explicit is not None:
        return explicit == "Orphan"
    for finalizer in finalizers:  # an earlier DELETE's choice outlives a request that makes none
        if finalizer in (ORPHAN, FOREGROUND):
            return finalizer == ORPHAN
    return default == ORPHAN_DEPENDENTS


def _should_foreground(default: str, finalizers: list[str], options: JSON) -> bool:
    if default == UNSUPPORTED:
        return False
    if options.get("orphanDependents") is not None:
        return False
    explicit = _explicit(options)
    if explicit is not None:
        return explicit == "Foreground"
    for finalizer in finalizers:
        if finalizer in (ORPHAN, FOREGROUND):
            return finalizer == FOREGROUND
    return False


def gc_finalizers(rtype: ResourceType, finalizers: list[str], options: JSON) -> list[str]:
    """The object's finalizers after this DELETE: unchanged (the same list) unless the GC set differs."""
    default = default_policy(rtype)
    result = [f for f in finalizers if f not in (ORPHAN, FOREGROUND)]
    if _should_orphan(default, finalizers, options):
        result.append(ORPHAN)
    if _should_foreground(default, finalizers, options):
        result.append(FOREGROUND)
    return finalizers if set(result) == set(finalizers) else result
