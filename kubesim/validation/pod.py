"""Pod and pod-template validation: the subset of pkg/apis/core/validation our controllers hit."""

from __future__ import annotations

import copy
from typing import Any

from kubesim.validation.common import (
    JSON,
    Causes,
    dns1123_label,
    duplicate,
    forbidden,
    invalid,
    non_negative,
    not_supported,
    positive,
    required,
    validate_labels,
)
from kubesim.validation.meta import validate_annotations
from kubesim.validation.quantity import quantity_value

RESTART_POLICIES = ("Always", "OnFailure", "Never")
DNS_POLICIES = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
PULL_POLICIES = ("Always", "IfNotPresent", "Never")
TERMINATION_MESSAGE_POLICIES = ("File", "FallbackToLogsOnError")
PROTOCOLS = ("SCTP", "TCP", "UDP")
POD_UPDATE_FORBIDDEN = (
    "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,"
    "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),"
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
)


def _required_choice(value: Any, field: str, allowed: tuple[str, ...]) -> Causes:
    """A required field with a fixed set of values: Required when empty, NotSupported when unknown."""
    if not value:
        return [required(field)]
    if value not in allowed:
        return [not_supported(field, value, allowed)]
    return []


def _containers(containers: Any, field: str, names: set[str], required_list: bool) -> Causes:
    causes: Causes = []
    if not containers:
        if required_list:
            causes.append(required(field))
        return causes
    if not isinstance(containers, list):
        return [invalid(field, "", "must be a list")]
    for i, container in enumerate(containers):
        path = f"{field}[{i}]"
        if not isinstance(container, dict):
            continue
        name = container.get("name") or ""
        if not name:
            causes.append(required(f"{path}.name"))
        else:
            causes.extend(invalid(f"{path}.name", name, m) for m in dns1123_label(name))
            if name in names:
                causes.append(duplicate(f"{path}.name", name))
            names.add(name)
        if not container.get("image"):
            causes.append(required(f"{path}.image"))
        causes += _required_choice(container.get("imagePullPolicy"), f"{path}.imagePullPolicy", PULL_POLICIES)
        message_policy = container.get("terminationMessagePolicy")
        if message_policy is not None and message_policy not in TERMINATION_MESSAGE_POLICIES:
            causes.append(
                not_supported(
                    f"{path}.terminationMessagePolicy", message_policy, TERMINATION_MESSAGE_POLICIES
                )
            )
        causes.extend(_ports(container.get("ports"), f"{path}.ports"))
        causes.extend(_resources(container.get("resources"), f"{path}.resources"))
    return causes


def _resources(resources: Any, field: str) -> Causes:
    """ValidateResourceRequirements: no negative quantity, and no request above its limit."""
    if not isinstance(resources, dict):
        return []
    causes: Causes = []
    amounts: dict[str, dict[str, Any]] = {}
    for kind in ("limits", "requests"):
        given = resources.get(kind)
        amounts[kind] = {}
        for name, raw in given.items() if isinstance(given, dict) else ():
            value = quantity_value(raw)
            if value is None:
                continue  # a quantity that does not parse failed decoding already
            amounts[kind][name] = value
            if value < 0:
                causes.append(
                    invalid(f"{field}.{kind}[{name}]", str(raw), "must be greater than or equal to 0")
                )
    for name, requested in amounts["requests"].items():
        limit = amounts["limits"].get(name)
        if limit is not None and requested > limit:
            raw_limit = resources["limits"][name]
            causes.append(
                invalid(
                    f"{field}.requests[{name}]",
                    str(resources["requests"][name]),
                    f"must be less than or equal to {name} limit of {raw_limit}",
                )
            )
    return causes


def _ports(ports: Any, field: str) -> Causes:
    causes: Causes = []
    for i, port in enumerate(ports or []):
        if not isinstance(port, dict):
            continue
        path = f"{field}[{i}]"
        number = port.get("containerPort")
        if not number:
            causes.append(required(f"{path}.containerPort"))
        elif isinstance(number, int) and not 1 <= number <= 65535:
            causes.append(invalid(f"{path}.containerPort", number, "must be between 1 and 65535, inclusive"))
        protocol = port.get("protocol")
        if protocol is not None and protocol not in PROTOCOLS:
            causes.append(not_supported(f"{path}.protocol", protocol, PROTOCOLS))
        if port.get("name"):
            causes.extend(invalid(f"{path}.name", port["name"], m) for m in dns1123_label(str(port["name"])))
    return causes


def validate_pod_spec(spec: Any, field: str) -> Causes:
    """ValidatePodSpec essentials: containers, names, policies, ports, deadlines."""
    if not isinstance(spec, dict):
        return [required(field)]
    names: set[str] = set()
    causes = _containers(spec.get("initContainers"), f"{field}.initContainers", names, False)
    causes += _containers(spec.get("containers"), f"{field}.containers", names, True)
    causes += _required_choice(spec.get("restartPolicy"), f"{field}.restartPolicy", RESTART_POLICIES)
    dns = spec.get("dnsPolicy")
    if dns is not None and dns not in DNS_POLICIES:
        causes.append(not_supported(f"{field}.dnsPolicy", dns, DNS_POLICIES))
    causes += positive(f"{field}.activeDeadlineSeconds", spec.get("activeDeadlineSeconds"))
    causes += non_negative(
        f"{field}.terminationGracePeriodSeconds", spec.get("terminationGracePeriodSeconds")
    )
    volumes: set[str] = set()
    for i, volume in enumerate(spec.get("volumes") or []):
        name = volume.get("name") if isinstance(volume, dict) else None
        path = f"{field}.volumes[{i}].name"
        if not name:
            causes.append(required(path))
            continue
        causes.extend(invalid(path, name, m) for m in dns1123_label(str(name)))
        if name in volumes:
            causes.append(duplicate(path, name))
        volumes.add(name)
    return causes


def validate_pod_template(template: Any, field: str) -> Causes:
    """A pod template inside a workload (ValidatePodTemplateSpec reports `<template>.labels`, without
    `.metadata`): labels, annotations and the spec."""
    if not isinstance(template, dict):
        return [required(field)]
    metadata = template.get("metadata") or {}
    causes = validate_labels(metadata.get("labels"), f"{field}.labels")
    causes += validate_annotations(metadata.get("annotations"), f"{field}.annotations")
    causes += validate_pod_spec(template.get("spec"), f"{field}.spec")
    return causes


def _mutable_view(spec: JSON) -> JSON:
    """The pod spec with the fields an update may change blanked out."""
    view = copy.deepcopy(spec)
    for key in ("containers", "initContainers"):
        for container in view.get(key) or []:
            if isinstance(container, dict):
                container.pop("image", None)
    for key in ("activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds", "schedulingGates"):
        view.pop(key, None)
    return view


def validate_pod_update(new: JSON, old: JSON) -> Causes:
    """Pods are mostly immutable. Limit: setting `spec.nodeName` on an unbound pod is accepted here (the
    simulated scheduler binds that way; the real API needs the binding subresource)."""
    new_spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    new_view, old_view = _mutable_view(new_spec), _mutable_view(old_spec)
    if not old_view.get("nodeName"):
        new_view.pop("nodeName", None)
        old_view.pop("nodeName", None)
    if new_view != old_view:
        return [forbidden("spec", POD_UPDATE_FORBIDDEN)]
    old_tolerations = old_spec.get("tolerations") or []
    new_tolerations = new_spec.get("tolerations") or []
    if any(t not in new_tolerations for t in old_tolerations):
        return [
            forbidden(
                "spec.tolerations", "existing toleration can not be modified except its tolerationSeconds"
            )
        ]
    return []
