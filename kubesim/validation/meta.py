"""Object metadata validation (ValidateObjectMeta and its update rules): names and generateName, namespace,
labels, annotations, ownerReferences, finalizers and managedFields entries."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubesim.validation.common import (
    JSON,
    NAME_RULES,
    OMIT,
    TOTAL_ANNOTATION_SIZE,
    Causes,
    dns1123_label,
    immutable,
    invalid,
    non_negative,
    problems,
    qualified_name,
    required,
    validate_labels,
)


def validate_annotations(annotations: Any, field: str) -> Causes:
    causes: Causes = []
    if not isinstance(annotations, dict):
        return causes
    for key in annotations:
        causes.extend(invalid(field, key, m) for m in problems(qualified_name, str(key).lower()))
    if sum(len(str(k)) + len(str(v)) for k, v in annotations.items()) > TOTAL_ANNOTATION_SIZE:
        causes.append(
            {
                "reason": "FieldValueTooLong",
                "message": f"Too long: must have at most {TOTAL_ANNOTATION_SIZE} bytes",
                "field": field,
            }
        )
    return causes


def validate_owner_references(refs: Any, field: str) -> Causes:
    causes: Causes = []
    if not isinstance(refs, list):
        return causes
    controllers = []
    for ref in refs:
        if not isinstance(ref, dict):
            continue
        api_version = str(ref.get("apiVersion") or "")
        if not api_version.rpartition("/")[2]:
            causes.append(
                invalid(f"{field}.apiVersion", api_version.rpartition("/")[2], "version must not be empty")
            )
        for key in ("kind", "name", "uid"):
            if not ref.get(key):
                causes.append(invalid(f"{field}.{key}", ref.get(key) or "", f"{key} must not be empty"))
        if ref.get("controller"):
            controllers.append(f"{ref.get('kind', '')}/{ref.get('name', '')}")
    if len(controllers) > 1:
        causes.append(
            invalid(
                field,
                OMIT,
                'Only one reference can have Controller set to true. Found "true" '
                f"in references for {' and '.join(controllers)}",
            )
        )
    return causes


def validate_finalizers(finalizers: Any, field: str) -> Causes:
    causes: Causes = []
    if not isinstance(finalizers, list):
        return causes
    for finalizer in finalizers:
        causes.extend(invalid(field, finalizer, m) for m in problems(qualified_name, str(finalizer)))
    if "orphan" in finalizers and "foregroundDeletion" in finalizers:
        causes.append(
            invalid(field, finalizers, "finalizer orphan and foregroundDeletion cannot be both set")
        )
    return causes


def validate_managed_fields(entries: Any, field: str) -> Causes:
    causes: Causes = []
    for i, entry in enumerate(entries if isinstance(entries, list) else []):
        if not isinstance(entry, dict):
            continue
        operation = entry.get("operation")
        if operation not in ("Apply", "Update"):
            causes.append(invalid(f"{field}[{i}].operation", operation or "", "must be `Apply` or `Update`"))
        fields_type = entry.get("fieldsType")
        if fields_type and fields_type != "FieldsV1":
            causes.append(invalid(f"{field}[{i}].fieldsType", fields_type, "must be `FieldsV1`"))
    return causes


_PARTS: tuple[tuple[str, Callable[[Any, str], Causes]], ...] = (
    ("labels", validate_labels),
    ("annotations", validate_annotations),
    ("ownerReferences", validate_owner_references),
    ("finalizers", validate_finalizers),
    ("managedFields", validate_managed_fields),
)


def validate_object_meta(
    obj: JSON, old: JSON | None, name_rule: str = "subdomain", field: str = "metadata"
) -> Causes:
    metadata = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    assert isinstance(metadata, dict)
    check = NAME_RULES[name_rule]
    causes: Causes = []
    name = metadata.get("name") or ""
    generate_name = metadata.get("generateName") or ""
    if generate_name and not name:
        masked = generate_name[:-1] + "a" if generate_name.endswith("-") else generate_name
        causes.extend(invalid(f"{field}.generateName", generate_name, m) for m in check(masked))
    if not name and not generate_name:
        causes.append(required(f"{field}.name", "name or generateName is required"))
    elif name:
        name_problems = check(name)
        if name_problems:
            causes.extend(invalid(f"{field}.name", name, m) for m in name_problems)
    namespace = metadata.get("namespace") or ""
    if namespace:  # cluster-scoped objects have theirs cleared before validation
        namespace_problems = problems(dns1123_label, namespace)
        if namespace_problems:
            causes.extend(invalid(f"{field}.namespace", namespace, m) for m in namespace_problems)
    generation = metadata.get("generation")
    if generation is not None:
        causes.extend(non_negative(f"{field}.generation", generation))
    for key, validator in _PARTS:  # only what is there: most objects carry a few of these
        value = metadata.get(key)
        if value is not None:
            causes.extend(validator(value, f"{field}.{key}"))
    if old is not None:
        old_meta = old.get("metadata") or {}
        for key in ("name", "namespace", "uid", "creationTimestamp"):
            if old_meta.get(key) and metadata.get(key) and old_meta[key] != metadata[key]:
                causes.append(immutable(f"{field}.{key}", metadata[key]))
    return causes
