"""Validation with kube-apiserver's messages.

- `validate(resource, obj, old)` → causes for a create (`old` None) or an update of the main resource;
  `resource` is the store key ("pods", "jobs.batch", "leases.coordination.k8s.io", "events", ...).
  Metadata rules (names, generateName, labels, annotations, ownerReferences, finalizers) apply to every
  type; type rules cover pods, jobs, cronjobs, replicasets, deployments, services, leases, events (the
  events.k8s.io/v1 rules when `obj.apiVersion` says so, else the lenient core/v1 ones) and CRDs.
- `validate_status(resource, new, old)` → causes for a /status write (Job status transition rules).
- `unknown_fields(gvk, obj)` → `.spec.foo`-style paths unknown to the schema (fieldValidation=Strict);
  the apiserver's 400 message quotes them without the leading dot.
- `invalid_message(kind, name, causes)` → the 422 Status message.
A cause is `{"reason": "FieldValueInvalid", "message": "Invalid value: ...", "field": "spec.x"}`.
"""

from __future__ import annotations

from typing import Any

from kubesim import schemas
from kubesim.validation_common import (
    JSON,
    OMIT,
    Causes,
    as_selector,
    dns1123_label,
    dns1123_subdomain,
    forbidden,
    immutable,
    invalid,
    non_negative,
    not_supported,
    positive,
    qualified_name,
    required,
    selector_is_empty,
    selector_matches,
    validate_label_selector,
    validate_object_meta,
)
from kubesim.validation_job import validate_job, validate_job_spec
from kubesim.validation_job_status import validate_job_status
from kubesim.validation_pod import validate_pod_spec, validate_pod_template, validate_pod_update
from kubesim.validation_schema import validate_custom

GVK = tuple[str, str, str]
_NAME_RULES = {"namespaces": "label", "services": "dns1035"}
_RBAC = "rbac.authorization.k8s.io"


def _name_rule(resource: str) -> str:
    if resource.endswith("." + _RBAC):
        return "segment"
    return _NAME_RULES.get(resource, "subdomain")


def _spec(obj: JSON) -> JSON:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def _replica_set_like(obj: JSON, old: JSON | None) -> Causes:
    """ValidateReplicaSetSpec / the shared part of ValidateDeploymentSpec."""
    spec = _spec(obj)
    causes = non_negative("spec.replicas", spec.get("replicas")) + non_negative(
        "spec.minReadySeconds", spec.get("minReadySeconds")
    )
    selector = spec.get("selector")
    if selector is None:
        causes.append(required("spec.selector"))
    else:
        causes += validate_label_selector(selector, "spec.selector")
        if selector_is_empty(selector):
            causes.append(
                invalid("spec.selector", as_selector(selector), "empty selector is invalid for deployment")
            )
    template = spec.get("template")
    if template is None:
        causes.append(required("spec.template"))
    else:
        labels = ((template.get("metadata") or {}).get("labels")) or {}
        if (
            isinstance(selector, dict)
            and not selector_is_empty(selector)
            and not selector_matches(selector, labels)
        ):
            causes.append(
                invalid(
                    "spec.template.metadata.labels", labels, "`selector` does not match template `labels`"
                )
            )
        causes += validate_pod_template(template, "spec.template")
        pod_spec = template.get("spec") or {}
        restart = pod_spec.get("restartPolicy")
        if restart is not None and restart != "Always":
            causes.append(not_supported("spec.template.spec.restartPolicy", restart, ("Always",)))
        if pod_spec.get("activeDeadlineSeconds") is not None:
            causes.append(
                invalid(
                    "spec.template.spec.activeDeadlineSeconds",
                    pod_spec["activeDeadlineSeconds"],
                    "activeDeadlineSeconds in ReplicaSet is not Supported",
                )
            )
    if old is not None and selector != _spec(old).get("selector"):
        causes.append(immutable("spec.selector", as_selector(selector)))
    return causes


def _deployment(obj: JSON, old: JSON | None) -> Causes:
    spec = _spec(obj)
    causes = _replica_set_like(obj, old)
    strategy = spec.get("strategy") or {}
    kind = strategy.get("type")
    if kind is not None and kind not in ("Recreate", "RollingUpdate"):
        causes.append(not_supported("spec.strategy.type", kind, ("Recreate", "RollingUpdate")))
    if kind == "Recreate" and strategy.get("rollingUpdate") is not None:
        causes.append(
            forbidden(
                "spec.strategy.rollingUpdate", "may not be specified when strategy `type` is 'Recreate'"
            )
        )
    rolling = strategy.get("rollingUpdate") or {}
    if (
        kind == "RollingUpdate"
        and rolling.get("maxUnavailable") in (0, "0%")
        and rolling.get("maxSurge") in (0, "0%")
    ):
        causes.append(
            invalid(
                "spec.strategy.rollingUpdate.maxUnavailable",
                rolling["maxUnavailable"],
                "may not be 0 when `maxSurge` is 0",
            )
        )
    causes += non_negative("spec.revisionHistoryLimit", spec.get("revisionHistoryLimit"))
    deadline, min_ready = spec.get("progressDeadlineSeconds"), spec.get("minReadySeconds") or 0
    if isinstance(deadline, int):
        causes += positive("spec.progressDeadlineSeconds", deadline)
        if deadline <= min_ready:
            causes.append(
                invalid("spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds")
            )
    return causes


def _cronjob(obj: JSON, old: JSON | None) -> Causes:
    spec = _spec(obj)
    causes: Causes = []
    if not spec.get("schedule"):
        causes.append(required("spec.schedule"))
    elif len(str(spec["schedule"]).split()) not in (5, 6) and not str(spec["schedule"]).startswith("@"):
        causes.append(
            invalid(
                "spec.schedule",
                spec["schedule"],
                f"expected exactly 5 fields, found {len(str(spec['schedule']).split())}: {spec['schedule']}",
            )
        )
    causes += non_negative("spec.startingDeadlineSeconds", spec.get("startingDeadlineSeconds"))
    policy = spec.get("concurrencyPolicy")
    if not policy:
        causes.append(required("spec.concurrencyPolicy"))
    elif policy not in ("Allow", "Forbid", "Replace"):
        causes.append(not_supported("spec.concurrencyPolicy", policy, ("Allow", "Forbid", "Replace")))
    job_spec = (spec.get("jobTemplate") or {}).get("spec")
    causes += validate_job_spec(job_spec, "spec.jobTemplate.spec")
    if isinstance(job_spec, dict):
        if job_spec.get("selector") is not None:
            causes.append(
                invalid(
                    "spec.jobTemplate.spec.selector",
                    as_selector(job_spec["selector"]),
                    "`selector` will be auto-generated",
                )
            )
        if job_spec.get("manualSelector"):
            causes.append(not_supported("spec.jobTemplate.spec.manualSelector", True, ("nil", "false")))
    for key in ("successfulJobsHistoryLimit", "failedJobsHistoryLimit"):
        causes += non_negative(f"spec.{key}", spec.get(key))
    name = (obj.get("metadata") or {}).get("name") or ""
    if old is None and len(name) > 52:
        causes.append(invalid("metadata.name", name, "must be no more than 52 characters"))
    return causes


def _service(obj: JSON, old: JSON | None) -> Causes:
    spec = _spec(obj)
    kind = spec.get("type", "ClusterIP")
    causes: Causes = []
    if kind not in ("ClusterIP", "NodePort", "LoadBalancer", "ExternalName"):
        causes.append(
            not_supported("spec.type", kind, ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort"))
        )
    if kind != "ExternalName" and spec.get("clusterIP") != "None" and not spec.get("ports"):
        causes.append(required("spec.ports"))
    for i, port in enumerate(spec.get("ports") or []):
        number = port.get("port") if isinstance(port, dict) else None
        if not isinstance(number, int) or not 1 <= number <= 65535:
            causes.append(invalid(f"spec.ports[{i}].port", number, "must be between 1 and 65535, inclusive"))
    return causes


def _lease(obj: JSON, old: JSON | None) -> Causes:
    spec = _spec(obj)
    return positive("spec.leaseDurationSeconds", spec.get("leaseDurationSeconds")) + non_negative(
        "spec.leaseTransitions", spec.get("leaseTransitions")
    )


def _event(obj: JSON, old: JSON | None) -> Causes:
    new_api = str(obj.get("apiVersion", "")).startswith("events.k8s.io/")
    regarding_key = "regarding" if new_api else "involvedObject"
    regarding = obj.get(regarding_key) or {}
    namespace = (obj.get("metadata") or {}).get("namespace") or ""
    causes: Causes = []
    regarding_ns = regarding.get("namespace") or ""
    if (not regarding_ns and namespace not in ("", "default")) or (
        regarding_ns and namespace != regarding_ns
    ):
        causes.append(invalid(f"{regarding_key}.namespace", regarding_ns, "does not match event.namespace"))
    if not new_api:
        return causes
    if not obj.get("eventTime"):
        causes.append(required("eventTime"))
    if obj.get("type") not in ("Normal", "Warning"):
        causes.append(invalid("type", "", f"has invalid value: {obj.get('type') or ''}"))
    for key in ("deprecatedFirstTimestamp", "deprecatedLastTimestamp", "deprecatedCount", "deprecatedSource"):
        if obj.get(key):
            causes.append(invalid(key, "", "needs to be unset"))
    controller = obj.get("reportingController") or ""
    if not controller:
        causes.append(required("reportingController"))
    causes.extend(invalid("reportingController", controller, m) for m in qualified_name(controller))
    for key, limit in (("reportingInstance", 128), ("action", 128), ("reason", 128)):
        value = str(obj.get(key) or "")
        if not value:
            causes.append(required(key))
        if len(value) > limit:
            causes.append(invalid(key, "", f"can have at most {limit} characters"))
    if len(str(obj.get("note") or "")) > 1024:
        causes.append(invalid("note", "", "can have at most 1024 characters"))
    series = obj.get("series")
    if isinstance(series, dict):
        if (series.get("count") or 0) < 2:
            causes.append(invalid("series.count", "", "should be at least 2"))
        if not series.get("lastObservedTime"):
            causes.append(required("series.lastObservedTime"))
    return causes


def _crd(obj: JSON, old: JSON | None) -> Causes:
    spec = _spec(obj)
    names = spec.get("names") or {}
    group, plural = str(spec.get("group") or ""), str(names.get("plural") or "")
    causes: Causes = []
    name = (obj.get("metadata") or {}).get("name") or ""
    if name != f"{plural}.{group}":
        causes.append(invalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group'))
    if not group:
        causes.append(required("spec.group"))
    else:
        causes.extend(invalid("spec.group", group, m) for m in dns1123_subdomain(group))
        if "." not in group:
            causes.append(invalid("spec.group", group, "should be a domain with at least one dot"))
    if not plural:
        causes.append(required("spec.names.plural"))
    else:
        causes.extend(invalid("spec.names.plural", plural, m) for m in dns1123_label(plural))
    if not names.get("kind"):
        causes.append(required("spec.names.kind"))
    scope = spec.get("scope")
    if scope not in ("Cluster", "Namespaced"):
        causes.append(not_supported("spec.scope", scope or "", ("Cluster", "Namespaced")))
    versions = spec.get("versions") or []
    if not versions:
        causes.append(
            invalid("spec.versions", OMIT, "must have exactly one version marked as storage version")
        )
    elif sum(1 for v in versions if v.get("storage")) != 1:
        causes.append(
            invalid("spec.versions", versions, "must have exactly one version marked as storage version")
        )
    for i, version in enumerate(versions):
        if not (version.get("schema") or {}).get("openAPIV3Schema"):
            causes.append(required(f"spec.versions[{i}].schema.openAPIV3Schema", "schemas are required"))
    if old is not None:
        for key in ("group",):
            if spec.get(key) != _spec(old).get(key):
                causes.append(immutable(f"spec.{key}", spec.get(key)))
    return causes


def _pod(obj: JSON, old: JSON | None) -> Causes:
    causes = validate_pod_spec(obj.get("spec"), "spec")
    if old is not None:
        causes += validate_pod_update(obj, old)
    return causes


_TYPE_RULES: dict[str, Any] = {
    "pods": _pod,
    "jobs.batch": validate_job,
    "cronjobs.batch": _cronjob,
    "replicasets.apps": _replica_set_like,
    "deployments.apps": _deployment,
    "services": _service,
    "leases.coordination.k8s.io": _lease,
    "events": _event,
    "events.events.k8s.io": _event,
    "customresourcedefinitions.apiextensions.k8s.io": _crd,
}


def validate(resource: str, obj: JSON, old: JSON | None) -> list[JSON]:
    """Causes (reason, message, field) for create (old None) or update; empty when valid."""
    causes = validate_object_meta(obj, old, _name_rule(resource))
    rules = _TYPE_RULES.get(resource)
    if rules is not None:
        causes += rules(obj, old)
    else:
        causes += _custom(obj)
    return causes


def _gvk_of(obj: JSON) -> GVK:
    group, _, version = str(obj.get("apiVersion") or "").rpartition("/")
    return group, version, str(obj.get("kind") or "")


def _custom(obj: JSON) -> Causes:
    """Custom resources: their CRD's schema."""
    gvk = _gvk_of(obj)
    schema = schemas.root(gvk) if schemas.is_custom(gvk) else None
    return validate_custom(obj, schema) if schema is not None else []


def validate_status(resource: str, new: JSON, old: JSON) -> list[JSON]:
    """Causes for a write to the status subresource."""
    causes = validate_object_meta(new, old, _name_rule(resource))
    if resource == "jobs.batch":
        causes += validate_job_status(new, old)
    elif resource not in _TYPE_RULES:
        causes += _custom(new)
    return causes


def unknown_fields(gvk: GVK, obj: JSON) -> list[str]:
    """Paths such as `.spec.foo` of fields the schema does not know (fieldValidation=Strict)."""
    root = schemas.root(gvk)
    found: list[str] = []
    if root is not None:
        _walk(obj, root, "", found, schemas.is_custom(gvk))
    return found


def _walk(value: Any, node: JSON, path: str, found: list[str], structural: bool = False) -> None:
    """Report unknown keys under `value`; only containers are descended into (scalars cannot hide any).
    `structural`: a CRD schema, where an object without properties keeps no field (the apiserver prunes
    them); built-in objects without properties (RawExtension, FieldsV1) are free-form."""
    if schemas.preserves_unknown(node) and not (structural and "object" in schemas.types(node)):
        return
    if node.get("x-kubernetes-preserve-unknown-fields"):
        return
    if isinstance(value, dict):
        properties = node.get("properties")
        additional = node.get("additionalProperties")
        embedded = node.get("x-kubernetes-embedded-resource")
        closed = structural and properties is None and additional is None
        for key, child_value in value.items():
            child_structural = structural and not (path == "" and key == "metadata")
            if properties is not None and key in properties:
                if isinstance(child_value, dict | list):
                    child = schemas.child(node, key)
                    if child is not None:
                        _walk(child_value, child, f"{path}.{key}", found, child_structural)
            elif isinstance(additional, dict):
                if isinstance(child_value, dict | list):
                    element = schemas.child(node, key)
                    if element is not None:
                        _walk(child_value, element, f"{path}.{key}", found, child_structural)
            elif additional is True or (embedded and key in ("apiVersion", "kind", "metadata")):
                continue
            elif properties is not None or additional is False or closed:
                found.append(f"{path}.{key}")
    elif isinstance(value, list):
        element = schemas.items(node)
        if element is not None:
            for i, item in enumerate(value):
                if isinstance(item, dict | list):
                    _walk(item, element, f"{path}[{i}]", found, structural)


def invalid_message(kind: str, name: str, causes: list[JSON]) -> str:
    """`<kind> "<name>" is invalid: <field>: <message>`; several causes print as `[a, b]`.
    `kind` is the qualified kind the apiserver uses (`Pod`, `Job.batch`, `Deployment.apps`)."""
    parts = [f"{c['field']}: {c['message']}" if c.get("field") else str(c["message"]) for c in causes]
    summary = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    return f'{kind} "{name}" is invalid: {summary}'
