"""Frozen copy of kubesim/validation/objects.py at 64be36a: the reference the optimised walks are compared
with (tests/unit/kubesim/validation/test_walks_unchanged.py).

Validation with kube-apiserver's messages.

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

from kubesim.schema import schemas
from kubesim.schema.nodes import Node, ValueMemo, compiled
from kubesim.validation import other_types
from kubesim.validation.common import JSON, Causes
from kubesim.validation.job import validate_job
from kubesim.validation.job_status import validate_job_status
from kubesim.validation.meta import validate_object_meta
from kubesim.validation.pod import validate_pod_spec, validate_pod_update
from kubesim.validation.schema import validate_custom

GVK = tuple[str, str, str]
_CONTAINERS = (dict, list)  # a tuple: cheaper to test than the union `dict | list`
_NAME_RULES = {"namespaces": "label", "services": "dns1035"}
_RBAC = "rbac.authorization.k8s.io"


def _name_rule(resource: str) -> str:
    if resource.endswith("." + _RBAC):
        return "segment"
    return _NAME_RULES.get(resource, "subdomain")


_SECTIONS = ValueMemo()  # unknown fields of top-level sections (a pod template's spec, sent again and again)
_SPECS = ValueMemo()  # causes of pod specs
_POD_SPEC = object()  # memo owner: pod specs validated as pods


def _pod(obj: JSON, old: JSON | None) -> Causes:
    spec = obj.get("spec")
    causes = list(_SPECS.get(_POD_SPEC, None, spec, lambda: tuple(validate_pod_spec(spec, "spec"))))
    if old is not None:
        causes += validate_pod_update(obj, old)
    return causes


_TYPE_RULES: dict[str, Any] = {
    "pods": _pod,
    "jobs.batch": validate_job,
    "cronjobs.batch": other_types.cronjob,
    "replicasets.apps": other_types.replica_set_like,
    "deployments.apps": other_types.deployment,
    "services": other_types.service,
    "leases.coordination.k8s.io": other_types.lease,
    "events": other_types.event,
    "events.events.k8s.io": other_types.event,
    "customresourcedefinitions.apiextensions.k8s.io": other_types.crd,
    "configmaps": other_types.config_data,
    "secrets": other_types.config_data,
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
    elif resource in ("replicasets.apps", "deployments.apps"):
        causes += other_types.replica_status(new, old)
    elif resource not in _TYPE_RULES:
        causes += _custom(new)
    return causes


def unknown_fields(gvk: GVK, obj: JSON) -> list[str]:
    """Paths such as `.spec.foo` of fields the schema does not know (fieldValidation=Strict)."""
    root = compiled(schemas.root(gvk))
    found: list[str] = []
    if root is not None:
        _walk(obj, root, "", found, schemas.is_custom(gvk))
    return found


def _walk(value: Any, node: Node, path: str, found: list[str], structural: bool = False) -> None:
    """Report unknown keys under `value`; only containers are descended into (scalars cannot hide any).
    `structural`: a CRD schema, where an object without properties keeps no field (the apiserver prunes
    them); built-in objects without properties (RawExtension, FieldsV1) are free-form."""
    if node.x_preserve or (node.free_form and not (structural and node.object_typed)):
        return
    if isinstance(value, dict):
        properties = node.properties
        additional = node.additional
        closed = structural and properties is None and additional is None
        for key, child_value in value.items():
            if properties is not None and key in properties:
                if isinstance(child_value, _CONTAINERS):
                    child = node.child(key)
                    if child is not None:
                        _descend(child_value, child, path, key, found, structural)
            elif isinstance(additional, dict):
                if isinstance(child_value, _CONTAINERS):
                    element = node.child(key)
                    if element is not None:
                        _descend(child_value, element, path, key, found, structural)
            elif additional is True or (node.embedded and key in ("apiVersion", "kind", "metadata")):
                continue
            elif properties is not None or additional is False or closed:
                found.append(f"{path}.{key}")
    elif isinstance(value, list):
        element = node.items()
        if element is not None:
            for i, item in enumerate(value):
                if isinstance(item, _CONTAINERS):
                    _walk(item, element, f"{path}[{i}]", found, structural)


def _descend(value: Any, node: Node, path: str, key: str, found: list[str], structural: bool) -> None:
    """Walk into `key`; a top-level section other than metadata (a pod template's spec, sent again and
    again) is looked up in the memo first."""
    if path:
        _walk(value, node, f"{path}.{key}", found, structural)
    elif key == "metadata":
        _walk(value, node, ".metadata", found, False)
    else:

        def walk_section() -> tuple[str, ...]:
            section: list[str] = []
            _walk(value, node, "." + key, section, structural)
            return tuple(section)

        found.extend(_SECTIONS.get(node, (key, structural), value, walk_section))


def invalid_message(kind: str, name: str, causes: list[JSON]) -> str:
    """`<kind> "<name>" is invalid: <field>: <message>`; several causes print as `[a, b]`.
    `kind` is the qualified kind the apiserver uses (`Pod`, `Job.batch`, `Deployment.apps`)."""
    parts = [f"{c['field']}: {c['message']}" if c.get("field") else str(c["message"]) for c in causes]
    summary = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    return f'{kind} "{name}" is invalid: {summary}'
