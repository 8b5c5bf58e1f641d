"""Frozen copy of kubesim/admission/defaults.py at 64be36a: the reference the shortcut is compared
with (tests/unit/kubesim/validation/test_walks_unchanged.py).

Defaulting as kube-apiserver does it: versioned defaults (pkg/apis/*/v1/defaults.go), the registry
strategies' create-time fields (pod status, Job selector generation) and the effect of
the default admission plugins on pods (Priority, DefaultTolerationSeconds, ServiceAccount).

`apply_defaults(resource, obj)` mutates `obj` in place. `resource` is the store key: "pods", "jobs.batch",
"replicasets.apps", "deployments.apps", "cronjobs.batch", "services", "namespaces", ... Every default only
fills what is missing, so calling it on updates is harmless. Job selector generation needs `metadata.uid`
(and `metadata.name`) to be set already.

Limits: the ServiceAccount admission's projected token volume (`kube-api-access-*`) is not added; services
get a deterministic fake ClusterIP from 10.96.0.0/16; quantities are not canonicalised.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable
from typing import Any

from kubesim.admission import gozero
from kubesim.admission.defaults_pod import ensure_dict, pod_admission, pod_defaults_only, pod_spec_defaults
from kubesim.schema import schemas

JSON = dict[str, Any]

MAX_INT32 = 2**31 - 1
JOB_NAME_LABELS = ("job-name", "batch.kubernetes.io/job-name")
CONTROLLER_UID_LABELS = ("controller-uid", "batch.kubernetes.io/controller-uid")


def _template(obj: JSON, *path: str) -> None:
    node: Any = obj
    for key in path:
        node = node.get(key) if isinstance(node, dict) else None
    if isinstance(node, dict):
        gozero.null_creation_timestamp(node)
        if isinstance(node.get("spec"), dict):
            pod_spec_defaults(node["spec"])


def generate_job_selector(obj: JSON) -> None:
    """Job strategy: label the template with job name and uid and select on the uid (manualSelector off)."""
    metadata = ensure_dict(obj, "metadata")
    spec = ensure_dict(obj, "spec")
    if spec.get("manualSelector"):
        return
    labels = ensure_dict(ensure_dict(ensure_dict(spec, "template"), "metadata"), "labels")
    for key in JOB_NAME_LABELS:
        labels.setdefault(key, metadata.get("name", ""))
    for key in CONTROLLER_UID_LABELS:
        labels.setdefault(key, metadata.get("uid", ""))
    match_labels = ensure_dict(ensure_dict(spec, "selector"), "matchLabels")
    match_labels.setdefault(CONTROLLER_UID_LABELS[1], metadata.get("uid", ""))


def _job(obj: JSON) -> None:
    gozero.omit_empty_job_status(obj)
    spec = ensure_dict(obj, "spec")
    metadata = ensure_dict(obj, "metadata")
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
    if spec.get("parallelism") is None:
        spec["parallelism"] = 1
    if spec.get("backoffLimit") is None:
        spec["backoffLimit"] = MAX_INT32 if spec.get("backoffLimitPerIndex") is not None else 6
    template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels")
    if template_labels and not metadata.get("labels"):
        metadata["labels"] = dict(template_labels)
    if not spec.get("completionMode"):
        spec["completionMode"] = "NonIndexed"
    if spec.get("suspend") is None:
        spec["suspend"] = False
    if spec.get("manualSelector") is None:
        spec["manualSelector"] = False
    policy = spec.get("podFailurePolicy")
    if isinstance(policy, dict):
        for rule in policy.get("rules") or []:
            for pattern in (rule.get("onPodConditions") or []) if isinstance(rule, dict) else []:
                if isinstance(pattern, dict) and not pattern.get("status"):
                    pattern["status"] = "True"
    if not spec.get("podReplacementPolicy"):
        spec["podReplacementPolicy"] = "Failed" if policy is not None else "TerminatingOrFailed"
    _template(obj, "spec", "template")
    if metadata.get("uid"):
        generate_job_selector(obj)
        # the apiserver defaults again when it reads the stored job: empty labels come from the template
        generated = ((spec.get("template") or {}).get("metadata") or {}).get("labels")
        if generated and not metadata.get("labels"):
            metadata["labels"] = dict(generated)


def _cronjob(obj: JSON) -> None:
    spec = ensure_dict(obj, "spec")
    spec.setdefault("concurrencyPolicy", "Allow")
    if spec.get("suspend") is None:
        spec["suspend"] = False
    spec.setdefault("successfulJobsHistoryLimit", 3)
    spec.setdefault("failedJobsHistoryLimit", 1)
    job_template = spec.get("jobTemplate")
    if isinstance(job_template, dict):
        gozero.null_creation_timestamp(job_template)
    _template(obj, "spec", "jobTemplate", "spec", "template")


def _replicas(obj: JSON) -> JSON:
    spec = ensure_dict(obj, "spec")
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    _template(obj, "spec", "template")
    return spec


def _replicaset(obj: JSON) -> None:
    _replicas(obj)


def _deployment(obj: JSON) -> None:
    spec = _replicas(obj)
    strategy = ensure_dict(spec, "strategy")
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = ensure_dict(strategy, "rollingUpdate")
        rolling.setdefault("maxUnavailable", "25%")
        rolling.setdefault("maxSurge", "25%")
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)


def _statefulset(obj: JSON) -> None:
    spec = _replicas(obj)
    spec.setdefault("podManagementPolicy", "OrderedReady")
    strategy = ensure_dict(spec, "updateStrategy")
    if not strategy.get("type"):
        strategy["type"] = "RollingUpdate"
        strategy.setdefault("rollingUpdate", {})
    if strategy["type"] == "RollingUpdate" and isinstance(strategy.get("rollingUpdate"), dict):
        strategy["rollingUpdate"].setdefault("partition", 0)
    spec.setdefault("revisionHistoryLimit", 10)
    retention = ensure_dict(spec, "persistentVolumeClaimRetentionPolicy")
    retention.setdefault("whenDeleted", "Retain")
    retention.setdefault("whenScaled", "Retain")


def _daemonset(obj: JSON) -> None:
    spec = ensure_dict(obj, "spec")
    strategy = ensure_dict(spec, "updateStrategy")
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = ensure_dict(strategy, "rollingUpdate")
        rolling.setdefault("maxUnavailable", 1)
        rolling.setdefault("maxSurge", 0)
    spec.setdefault("revisionHistoryLimit", 10)
    _template(obj, "spec", "template")


def _service(obj: JSON) -> None:
    spec = ensure_dict(obj, "spec")
    spec.setdefault("sessionAffinity", "None")
    spec.setdefault("type", "ClusterIP")
    for port in spec.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
            if port.get("targetPort") in (None, 0, ""):
                port["targetPort"] = port.get("port")
    if spec["type"] in ("ClusterIP", "NodePort", "LoadBalancer"):
        spec.setdefault("internalTrafficPolicy", "Cluster")
    if spec["type"] == "ExternalName":
        return
    if not spec.get("clusterIP"):
        metadata = obj.get("metadata") or {}
        key = f"{metadata.get('namespace', '')}/{metadata.get('name', '')}".encode()
        digest = hashlib.sha256(key).digest()
        spec["clusterIP"] = f"10.96.{digest[0]}.{max(digest[1], 1) % 255}"
    spec.setdefault("clusterIPs", [spec["clusterIP"]])
    spec.setdefault("ipFamilies", ["IPv4"])
    spec.setdefault("ipFamilyPolicy", "SingleStack")


def _namespace(obj: JSON) -> None:
    metadata = ensure_dict(obj, "metadata")
    if metadata.get("name"):
        ensure_dict(metadata, "labels")["kubernetes.io/metadata.name"] = metadata["name"]
    # spec.finalizers' `kubernetes` is the create strategy's (registry.strategy), not a default: a default
    # would put it back on every update, and a /finalize that empties the list would never stick.
    ensure_dict(obj, "status").setdefault("phase", "Active")


def _secret(obj: JSON) -> None:
    obj.setdefault("type", "Opaque")


def _pod_template(obj: JSON) -> None:
    _template(obj, "template")


def _replication_controller(obj: JSON) -> None:
    spec = _replicas(obj)
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels")
    if labels:
        if not spec.get("selector"):
            spec["selector"] = dict(labels)
        metadata = ensure_dict(obj, "metadata")
        if not metadata.get("labels"):
            metadata["labels"] = dict(labels)


_BY_RESOURCE: dict[str, Callable[[JSON], None]] = {
    "pods": pod_defaults_only,
    "jobs.batch": _job,
    "cronjobs.batch": _cronjob,
    "replicasets.apps": _replicaset,
    "deployments.apps": _deployment,
    "statefulsets.apps": _statefulset,
    "daemonsets.apps": _daemonset,
    "replicationcontrollers": _replication_controller,
    "podtemplates": _pod_template,
    "events": gozero.core_event,
    "services": _service,
    "namespaces": _namespace,
    "secrets": _secret,
}


def schema_defaults(value: Any, node: JSON | None) -> None:
    """Structural-schema defaulting of custom resources: a missing (or null, when not nullable) property
    takes its `default`; objects, maps and list items are descended into."""
    if node is None:
        return
    if isinstance(value, dict):
        properties = node.get("properties") or {}
        for key, prop in properties.items():
            if "default" in prop and (key not in value or (value[key] is None and not prop.get("nullable"))):
                value[key] = copy.deepcopy(prop["default"])
        additional = node.get("additionalProperties")
        for key, item in value.items():
            child = properties.get(key, additional if isinstance(additional, dict) else None)
            if isinstance(child, dict) and isinstance(item, dict | list):
                schema_defaults(item, child)
    elif isinstance(value, list) and isinstance(node.get("items"), dict):
        for item in value:
            if isinstance(item, dict | list):
                schema_defaults(item, node["items"])


_ADMISSION: dict[str, Callable[[JSON], None]] = {"pods": pod_admission}


def admit(resource: str, obj: JSON) -> None:
    """What the default mutating admission plugins add (pods: service account, priority, tolerations)."""
    plugin = _ADMISSION.get(resource)
    if plugin is not None:
        plugin(obj)


def apply_defaults(resource: str, obj: JSON, *, admission: bool = True) -> None:
    """Default `obj` of `resource` ("pods", "jobs.batch", ...) in place, then (unless `admission` is
    False: a create does it after recording managedFields) run `admit`. Custom resources take the defaults
    of their CRD schema (registered with kubesim.schema.schemas); other unknown resources are left alone."""
    defaulter = _BY_RESOURCE.get(resource)
    if defaulter is not None:
        defaulter(obj)
        if admission:
            admit(resource, obj)
        return
    group, _, version = str(obj.get("apiVersion") or "").rpartition("/")
    gvk = (group, version, str(obj.get("kind") or ""))
    if schemas.is_custom(gvk):
        root = schemas.root(gvk) or {}
        for key, item in obj.items():
            prop = (root.get("properties") or {}).get(key)
            if key != "metadata" and isinstance(item, dict | list) and isinstance(prop, dict):
                schema_defaults(item, prop)
        for key, prop in (root.get("properties") or {}).items():
            if key not in obj and isinstance(prop, dict) and "default" in prop:
                obj[key] = copy.deepcopy(prop["default"])
