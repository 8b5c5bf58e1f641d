"""Validation rules of the workload and API types other than pods and jobs: ReplicaSet, Deployment, CronJob,
Service, Lease, Event (core/v1 and events.k8s.io/v1) and CustomResourceDefinition."""

from __future__ import annotations

import re

from cronschedule import ScheduleError, UnknownTimeZoneError, load_location, parse_standard
from kubesim.validation.common import (
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
    too_long,
    validate_label_selector,
)
from kubesim.validation.job import validate_job_spec
from kubesim.validation.pod import validate_pod_template


def _spec(obj: JSON) -> JSON:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def replica_set_like(obj: JSON, old: JSON | None) -> Causes:
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


_PERCENT = re.compile(r"^[0-9]+%$")
_PERCENT_MESSAGE = (
    "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', "
    "regex used for validation is '[0-9]+%')"
)


def _int_or_percent_value(value: object) -> int | None:
    """getIntOrPercentValue: the number of an int or a valid percent string, else None."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and _PERCENT.match(value):
        return int(value[:-1])
    return None


def _rolling_update(rolling: JSON) -> Causes:
    """ValidateRollingUpdateDeployment: both values non-negative ints or percent strings, maxUnavailable at
    most 100%."""
    causes: Causes = []
    base = "spec.strategy.rollingUpdate"
    for name in ("maxUnavailable", "maxSurge"):
        value = rolling.get(name)
        if isinstance(value, str) and not _PERCENT.match(value):
            causes.append(invalid(f"{base}.{name}", value, _PERCENT_MESSAGE))
        else:
            causes += non_negative(f"{base}.{name}", value)
    unavailable = rolling.get("maxUnavailable")
    if isinstance(unavailable, str) and _PERCENT.match(unavailable) and int(unavailable[:-1]) > 100:
        causes.append(invalid(f"{base}.maxUnavailable", unavailable, "must not be greater than 100%"))
    return causes


def deployment(obj: JSON, old: JSON | None) -> Causes:
    spec = _spec(obj)
    causes = replica_set_like(obj, old)
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
    if kind == "RollingUpdate":
        causes += _rolling_update(rolling)
    if (
        kind == "RollingUpdate"
        and _int_or_percent_value(rolling.get("maxUnavailable")) == 0
        and _int_or_percent_value(rolling.get("maxSurge")) == 0
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


def cronjob(obj: JSON, old: JSON | None) -> Causes:
    spec = _spec(obj)
    causes: Causes = []
    if not spec.get("schedule"):
        causes.append(required("spec.schedule"))
    else:
        old_schedule = str(((old or {}).get("spec") or {}).get("schedule") or "")
        causes += _schedule(str(spec["schedule"]), spec.get("timeZone"), "TZ" in old_schedule)
    if spec.get("timeZone") is not None:
        causes += _time_zone(spec["timeZone"])
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


def _schedule(schedule: str, time_zone: object, allow_tz: bool) -> Causes:
    """validateScheduleFormat: robfig's ParseStandard must accept it; `TZ=`/`CRON_TZ=` only survives on an
    update of a CronJob that already had it, and never beside `timeZone`."""
    causes: Causes = []
    try:
        parse_standard(schedule)
    except ScheduleError as err:
        causes.append(invalid("spec.schedule", schedule, str(err)))
    if "TZ" in schedule:
        if not allow_tz:
            detail = "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"
            causes.append(invalid("spec.schedule", schedule, detail))
        elif time_zone is not None:
            detail = "cannot use both timeZone field and TZ or CRON_TZ in schedule"
            causes.append(invalid("spec.schedule", schedule, detail))
    return causes


_TIME_ZONE_PART = re.compile(r"[A-Za-z.\-_0-9+]{1,14}")


def _time_zone(time_zone: object) -> Causes:
    """validateTimeZone: a non-empty IANA name (never `Local`) that loads."""
    name = str(time_zone)
    if not name:
        return [invalid("spec.timeZone", name, "timeZone must be nil or non-empty string")]
    if name.lower() == "local":
        detail = "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"
        return [invalid("spec.timeZone", name, detail)]
    for part in name.split("/"):
        if part in (".", "..", "-") or not _TIME_ZONE_PART.fullmatch(part):
            return [invalid("spec.timeZone", name, f"unknown time zone {name}")]
    try:
        load_location(name)
    except UnknownTimeZoneError as err:
        return [invalid("spec.timeZone", name, str(err))]
    return []


def service(obj: JSON, old: JSON | None) -> Causes:
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


def lease(obj: JSON, old: JSON | None) -> Causes:
    spec = _spec(obj)
    return positive("spec.leaseDurationSeconds", spec.get("leaseDurationSeconds")) + non_negative(
        "spec.leaseTransitions", spec.get("leaseTransitions")
    )


def event(obj: JSON, old: JSON | None) -> Causes:
    """ValidateEventCreate: the legacy rules for both APIs (field paths use the internal names:
    involvedObject, message; reportingComponent when the request came through core/v1), then the strict
    events.k8s.io/v1 rules."""
    new_api = str(obj.get("apiVersion", "")).startswith("events.k8s.io/")
    regarding = obj.get("regarding" if new_api else "involvedObject") or {}
    controller = str(obj.get("reportingController" if new_api else "reportingComponent") or "")
    note = str(obj.get("note" if new_api else "message") or "")
    namespace = (obj.get("metadata") or {}).get("namespace") or ""
    regarding_ns = regarding.get("namespace") or ""
    causes: Causes = []
    if not obj.get("eventTime"):
        if (not regarding_ns and namespace not in ("", "default")) or (
            regarding_ns and namespace != regarding_ns
        ):
            causes.append(invalid("involvedObject.namespace", regarding_ns, "does not match event.namespace"))
    else:
        if not regarding_ns and namespace not in ("default", "kube-system"):
            causes.append(invalid("involvedObject.namespace", regarding_ns, "does not match event.namespace"))
        controller_field = "reportingController" if new_api else "reportingComponent"
        if not controller:
            causes.append(required(controller_field))
        causes.extend(invalid(controller_field, controller, m) for m in qualified_name(controller))
        for key, limit in (("reportingInstance", 128), ("action", 128), ("reason", 128)):
            value = str(obj.get(key) or "")
            if not value:
                causes.append(required(key))
            if len(value) > limit:
                causes.append(invalid(key, "", f"can have at most {limit} characters"))
        if len(note) > 1024:
            causes.append(invalid("message", "", "can have at most 1024 characters"))
    if not new_api:
        return causes
    series = obj.get("series")
    if isinstance(series, dict):
        if (series.get("count") or 0) < 2:
            causes.append(invalid("series.count", "", "should be at least 2"))
        if not series.get("lastObservedTime"):
            causes.append(required("series.lastObservedTime"))
    if not obj.get("eventTime"):
        causes.append(required("eventTime"))
    if obj.get("type") not in ("Normal", "Warning"):
        causes.append(invalid("type", "", f"has invalid value: {obj.get('type') or ''}"))
    for key in ("deprecatedFirstTimestamp", "deprecatedLastTimestamp", "deprecatedCount", "deprecatedSource"):
        if obj.get(key):
            causes.append(invalid(key, "", "needs to be unset"))
    return causes


def crd(obj: JSON, old: JSON | None) -> Causes:
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


CONFIG_KEY_RE = re.compile(r"[-._a-zA-Z0-9]+")
CONFIG_KEY_MSG = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  "
    "or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
)
MAX_CONFIG_SIZE = 1024 * 1024


def config_data(obj: JSON, old: JSON | None) -> Causes:
    """ConfigMap and Secret keys (data, binaryData/stringData) and the 1 MiB total."""
    causes: Causes = []
    seen: set[str] = set()
    total = 0
    for section in ("data", "binaryData", "stringData"):
        values = obj.get(section)
        if not isinstance(values, dict):
            continue
        for key, value in values.items():
            key = str(key)
            field = f"{section}[{key}]"
            if len(key) > 253:
                causes.append(invalid(field, key, "must be no more than 253 characters"))
            if not CONFIG_KEY_RE.fullmatch(key):
                causes.append(invalid(field, key, CONFIG_KEY_MSG))
            elif key in (".", ".."):
                causes.append(invalid(field, key, f"must not be '{key}'"))
            elif key.startswith(".."):
                causes.append(invalid(field, key, "must not start with '..'"))
            if section == "binaryData" and key in seen:
                causes.append(invalid("binaryData", key, "duplicate of key present in data"))
            seen.add(key)
            total += len(str(value or ""))
    if total > MAX_CONFIG_SIZE:
        causes.append(too_long("", MAX_CONFIG_SIZE))
    return causes


def replica_status(new: JSON, old: JSON) -> Causes:
    """ValidateReplicaSetStatus / ValidateDeploymentStatus: counters non-negative and consistent."""
    status = new.get("status") or {}
    counters = (
        "replicas",
        "fullyLabeledReplicas",
        "updatedReplicas",
        "readyReplicas",
        "availableReplicas",
        "unavailableReplicas",
        "observedGeneration",
        "collisionCount",
        "terminatingReplicas",
    )
    causes: Causes = []
    for key in counters:
        causes += non_negative(f"status.{key}", status.get(key))
    replicas, ready = status.get("replicas") or 0, status.get("readyReplicas") or 0
    for key in ("fullyLabeledReplicas", "updatedReplicas", "readyReplicas", "availableReplicas"):
        value = status.get(key)
        if isinstance(value, int) and value > replicas:
            causes.append(invalid(f"status.{key}", value, "cannot be greater than status.replicas"))
    available = status.get("availableReplicas")
    if isinstance(available, int) and available > ready:
        causes.append(invalid("status.availableReplicas", available, "cannot be greater than readyReplicas"))
    return causes
