"""Job (batch/v1) validation: spec on create/update, immutability, and the strengthened status rules that
the apiserver applies to /status writes (each rule only when the fields it looks at changed)."""

from __future__ import annotations

import copy
import re
from typing import Any

from kubesim.validation.common import (
    JSON,
    OMIT,
    Causes,
    as_selector,
    dns1123_label,
    dns1123_subdomain,
    duplicate,
    immutable,
    invalid,
    non_negative,
    not_supported,
    qualified_name,
    required,
    selector_matches,
    validate_label_selector,
)
from kubesim.validation.pod import validate_pod_template

INDEXED, NON_INDEXED = "Indexed", "NonIndexed"
MAX_INDEXED_PARALLELISM = 100_000
MAX_MANAGED_BY = 63
ACTIONS = ("Count", "FailIndex", "FailJob", "Ignore")
_HTTP_PATH = re.compile(r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+")


def _generated_selector(job: JSON) -> Causes:
    spec, metadata = job.get("spec") or {}, job.get("metadata") or {}
    if spec.get("manualSelector") or spec.get("selector") is None:
        return []
    causes: Causes = []
    uid, name = metadata.get("uid") or "", metadata.get("name") or ""
    if not uid:
        causes.append(required("metadata.uid"))
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    expected = {
        "controller-uid": uid,
        "job-name": name,
        "batch.kubernetes.io/controller-uid": uid,
        "batch.kubernetes.io/job-name": name,
    }
    for key, value in expected.items():
        field = f"spec.template.metadata.labels[{key}]"
        if key not in labels:
            causes.append(required(field, f"must be '{value}'"))
        elif labels[key] != value:
            causes.append(invalid(field, labels, f"must be '{value}'"))
    if not selector_matches(spec["selector"], expected):
        causes.append(
            invalid("spec.selector", as_selector(spec["selector"]), "`selector` not auto-generated")
        )
    return causes


def _managed_by(value: Any, field: str) -> Causes:
    text = str(value)
    prefix, slash, path = text.partition("/")
    if not slash or not prefix or not path:
        causes = [invalid(field, text, 'must be a domain-prefixed path (such as "acme.io/foo")')]
    else:
        causes = [invalid(field, prefix, m) for m in dns1123_subdomain(prefix)]
        if not _HTTP_PATH.fullmatch(path):
            causes.append(
                invalid(
                    field,
                    path,
                    "Invalid path: regex used for validation is '[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+'",
                )
            )
    if len(text) > MAX_MANAGED_BY:
        causes.append(
            {
                "reason": "FieldValueTooLong",
                "field": field,
                "message": f"Too long: may not be longer than {MAX_MANAGED_BY}",
            }
        )
    return causes


def _pod_failure_policy(spec: JSON, field: str) -> Causes:
    causes: Causes = []
    template_spec = (spec.get("template") or {}).get("spec") or {}
    containers = {
        c.get("name") for key in ("containers", "initContainers") for c in template_spec.get(key) or []
    }
    for i, rule in enumerate((spec.get("podFailurePolicy") or {}).get("rules") or []):
        path = f"{field}.rules[{i}]"
        action = rule.get("action")
        if not action:
            causes.append(
                required(f"{path}.action", 'valid values: ["Count" "FailIndex" "FailJob" "Ignore"]')
            )
        elif action == "FailIndex" and spec.get("backoffLimitPerIndex") is None:
            causes.append(invalid(f"{path}.action", action, "requires the backoffLimitPerIndex to be set"))
        elif action not in ACTIONS:
            causes.append(not_supported(f"{path}.action", action, ACTIONS))
        exit_codes, conditions = rule.get("onExitCodes"), rule.get("onPodConditions")
        if exit_codes is not None:
            causes.extend(_on_exit_codes(exit_codes, f"{path}.onExitCodes", containers))
        for j, pattern in enumerate(conditions or []):
            causes.extend(
                invalid(f"{path}.onPodConditions[{j}].type", pattern.get("type"), m)
                for m in qualified_name(str(pattern.get("type", "")))
            )
            status = pattern.get("status")
            if status not in ("False", "True", "Unknown"):
                causes.append(
                    not_supported(f"{path}.onPodConditions[{j}].status", status, ("False", "True", "Unknown"))
                )
        if exit_codes is not None and conditions:
            causes.append(
                invalid(path, OMIT, "specifying both OnExitCodes and OnPodConditions is not supported")
            )
        if exit_codes is None and not conditions:
            causes.append(
                invalid(path, OMIT, "specifying one of OnExitCodes and OnPodConditions is required")
            )
    return causes


def _on_exit_codes(requirement: JSON, field: str, containers: set[Any]) -> Causes:
    causes: Causes = []
    operator = requirement.get("operator")
    if not operator:
        causes.append(required(f"{field}.operator", 'valid values: ["In" "NotIn"]'))
    elif operator not in ("In", "NotIn"):
        causes.append(not_supported(f"{field}.operator", operator, ("In", "NotIn")))
    name = requirement.get("containerName")
    if name is not None and name not in containers:
        causes.append(
            invalid(
                f"{field}.containerName",
                name,
                "must be one of the container or initContainer names in the pod template",
            )
        )
    values = requirement.get("values") or []
    if not values:
        causes.append(invalid(f"{field}.values", OMIT, "at least one value is required"))
    seen: set[int] = set()
    for j, value in enumerate(values):
        if operator == "In" and value == 0:
            causes.append(invalid(f"{field}.values[{j}]", value, "must not be 0 for the In operator"))
        if value in seen:
            causes.append(duplicate(f"{field}.values[{j}]", value))
        seen.add(value)
    if values != sorted(values):
        causes.append(invalid(f"{field}.values", OMIT, "must be ordered"))
    return causes


def validate_job_spec(spec: Any, field: str = "spec") -> Causes:
    if not isinstance(spec, dict):
        return [required(field)]
    causes: Causes = []
    for key in (
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
        "ttlSecondsAfterFinished",
        "backoffLimitPerIndex",
        "maxFailedIndexes",
    ):
        causes += non_negative(f"{field}.{key}", spec.get(key))
    if spec.get("maxFailedIndexes") is not None and spec.get("backoffLimitPerIndex") is None:
        causes.append(required(f"{field}.backoffLimitPerIndex", "when maxFailedIndexes is specified"))
    if spec.get("managedBy") is not None:
        causes += _managed_by(spec["managedBy"], f"{field}.managedBy")
    mode = spec.get("completionMode")
    if mode is not None and mode not in (NON_INDEXED, INDEXED):
        causes.append(not_supported(f"{field}.completionMode", mode, (NON_INDEXED, INDEXED)))
    if mode == INDEXED:
        if spec.get("completions") is None:
            causes.append(required(f"{field}.completions", "when completion mode is Indexed"))
        parallelism = spec.get("parallelism")
        if isinstance(parallelism, int) and parallelism > MAX_INDEXED_PARALLELISM:
            causes.append(
                invalid(
                    f"{field}.parallelism",
                    parallelism,
                    "must be less than or equal to 100000 when completion mode is Indexed",
                )
            )
        completions, max_failed = spec.get("completions"), spec.get("maxFailedIndexes")
        if isinstance(completions, int) and isinstance(max_failed, int) and max_failed > completions:
            causes.append(
                invalid(f"{field}.maxFailedIndexes", max_failed, "must be less than or equal to completions")
            )
    else:
        for key in ("backoffLimitPerIndex", "maxFailedIndexes"):
            if spec.get(key) is not None:
                causes.append(invalid(f"{field}.{key}", spec[key], "requires indexed completion mode"))
    if spec.get("podFailurePolicy") is not None:
        causes += _pod_failure_policy(spec, f"{field}.podFailurePolicy")
    if spec.get("successPolicy") is not None and mode != INDEXED:
        causes.append(invalid(f"{field}.successPolicy", OMIT, "requires indexed completion mode"))
    replacement = spec.get("podReplacementPolicy")
    if replacement is not None:
        allowed = (
            ("Failed",) if spec.get("podFailurePolicy") is not None else ("Failed", "TerminatingOrFailed")
        )
        if replacement not in allowed:
            causes.append(not_supported(f"{field}.podReplacementPolicy", replacement, allowed))
    template = spec.get("template")
    causes += validate_pod_template(template, f"{field}.template")
    restart = (
        ((template or {}).get("spec") or {}).get("restartPolicy") if isinstance(template, dict) else None
    )
    restart_field = f"{field}.template.spec.restartPolicy"
    if restart in (None, "", "Always"):
        causes.append(required(restart_field, 'valid values: "OnFailure", "Never"'))
    elif restart not in ("OnFailure", "Never"):
        causes.append(not_supported(restart_field, restart, ("OnFailure", "Never")))
    elif spec.get("podFailurePolicy") is not None and restart != "Never":
        causes.append(
            invalid(restart_field, restart, 'only "Never" is supported when podFailurePolicy is specified')
        )
    return causes


def validate_job(job: JSON, old: JSON | None) -> Causes:
    """ValidateJob (create) or ValidateJobUpdate; metadata is validated by the caller."""
    spec = job.get("spec") or {}
    causes = _generated_selector(job) + validate_job_spec(spec)
    selector = spec.get("selector")
    if selector is None:
        causes.append(required("spec.selector"))
    else:
        causes += validate_label_selector(selector, "spec.selector")
        labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        if not selector_matches(selector, labels):
            causes.append(
                invalid(
                    "spec.template.metadata.labels", labels, "`selector` does not match template `labels`"
                )
            )
    completions = spec.get("completions")
    if (
        old is None
        and spec.get("completionMode") == INDEXED
        and isinstance(completions, int)
        and completions > 0
    ):
        name = (job.get("metadata") or {}).get("name") or ""
        hostname = f"{name}-{completions - 1}"
        if dns1123_label(hostname):
            causes.append(
                invalid(
                    "metadata.name", name, f"will not able to create pod with invalid DNS label: {hostname}"
                )
            )
    if old is not None:
        causes += _job_update(spec, old.get("spec") or {}, (old.get("status") or {}).get("startTime") is None)
    return causes


def _job_update(spec: JSON, old_spec: JSON, never_started: bool) -> Causes:
    causes: Causes = []
    if spec.get("completions") != old_spec.get("completions"):
        if spec.get("completionMode") != INDEXED:
            causes.append(immutable("spec.completions", spec.get("completions")))
        elif spec.get("completions") is not None and spec.get("completions") != spec.get("parallelism"):
            causes.append(
                invalid(
                    "spec.completions",
                    spec.get("completions"),
                    "can only be modified in tandem with spec.parallelism",
                )
            )
    for key in (
        "selector",
        "completionMode",
        "podFailurePolicy",
        "backoffLimitPerIndex",
        "managedBy",
        "successPolicy",
    ):
        if spec.get(key) != old_spec.get(key):
            value = as_selector(spec.get(key)) if key == "selector" else spec.get(key)
            causes.append(immutable(f"spec.{key}", value))
    template, old_template = (
        copy.deepcopy(spec.get("template") or {}),
        copy.deepcopy(old_spec.get("template") or {}),
    )
    if spec.get("suspend") and never_started:
        for view in (template, old_template):
            view.setdefault("metadata", {}).pop("labels", None)
            view["metadata"].pop("annotations", None)
            pod_spec = view.setdefault("spec", {})
            for key in ("nodeSelector", "tolerations", "schedulingGates"):
                pod_spec.pop(key, None)
            if isinstance(pod_spec.get("affinity"), dict):
                pod_spec["affinity"].pop("nodeAffinity", None)
                if not pod_spec["affinity"]:
                    pod_spec.pop("affinity")
    if template != old_template:
        causes.append(immutable("spec.template", OMIT))
    return causes


def condition_true(job: JSON, condition_type: str) -> bool:
    return any(
        c.get("type") == condition_type and c.get("status") == "True"
        for c in (job.get("status") or {}).get("conditions") or []
    )


def parse_indexes(text: str, completions: int) -> tuple[list[tuple[int, int]], str | None]:
    """Intervals of a completedIndexes/failedIndexes string, or the upstream parse error."""
    intervals: list[tuple[int, int]] = []
    if not text:
        return intervals, None
    for fragment in text.split(","):
        limits = fragment.split("-")
        if len(limits) > 2:
            return [], (
                f'the fragment "{fragment}" violates the requirement that an index interval can have '
                "at most two parts separated by '-'"
            )
        numbers = []
        for limit in limits:
            if not re.fullmatch(r"[+-]?\d+", limit):
                return [], f'cannot convert string to integer for index: "{limit}"'
            if int(limit) >= completions:
                return [], f'too large index: "{limit}"'
            numbers.append(int(limit))
        low, high = numbers[0], numbers[-1]
        if len(numbers) == 2 and low >= high:
            return [], f"non-increasing order, previous: {low}, current: {high}"
        if intervals and intervals[-1][1] >= low:
            return [], f"non-increasing order, previous: {intervals[-1][1]}, current: {low}"
        intervals.append((low, high))
    return intervals, None
