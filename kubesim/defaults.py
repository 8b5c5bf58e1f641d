"""Defaulting as kube-apiserver does it: versioned defaults (pkg/apis/*/v1/defaults.go), the registry
strategies' create-time fields (pod status, Job selector generation, namespace finalizer) and the effect of
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
from decimal import Decimal, InvalidOperation
from typing import Any

from kubesim import schemas

JSON = dict[str, Any]

MAX_INT32 = 2**31 - 1
JOB_NAME_LABELS = ("job-name", "batch.kubernetes.io/job-name")
CONTROLLER_UID_LABELS = ("controller-uid", "batch.kubernetes.io/controller-uid")
SYSTEM_PRIORITIES = {"system-cluster-critical": 2000000000, "system-node-critical": 2000001000}
_DEFAULT_TOLERATIONS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")


def _dict(parent: JSON, key: str) -> JSON:
    value = parent.get(key)
    if not isinstance(value, dict):
        value = parent[key] = {}
    return value


def image_pull_policy(image: str) -> str:
    """Always for `:latest` or an untagged image without digest, else IfNotPresent."""
    if "@" in image:
        return "IfNotPresent"
    last = image.rsplit("/", 1)[-1]
    tag = last.partition(":")[2] if ":" in last else "latest"
    return "Always" if tag == "latest" else "IfNotPresent"


def _probe(probe: Any) -> None:
    if not isinstance(probe, dict):
        return
    for key, value in (("timeoutSeconds", 1), ("periodSeconds", 10), ("successThreshold", 1),
                       ("failureThreshold", 3)):
        if not probe.get(key):
            probe[key] = value
    http = probe.get("httpGet")
    if isinstance(http, dict):
        http.setdefault("path", "/")
        http.setdefault("scheme", "HTTP")


def _container(container: Any) -> None:
    if not isinstance(container, dict):
        return
    if not container.get("imagePullPolicy"):
        container["imagePullPolicy"] = image_pull_policy(str(container.get("image", "")))
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    container.setdefault("resources", {})
    for port in container.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
    for env in container.get("env") or []:
        field_ref = (env.get("valueFrom") or {}).get("fieldRef") if isinstance(env, dict) else None
        if isinstance(field_ref, dict):
            field_ref.setdefault("apiVersion", "v1")
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        _probe(container.get(probe))


def _volume(volume: Any) -> None:
    if not isinstance(volume, dict):
        return
    if set(volume) <= {"name"}:
        volume["emptyDir"] = {}
    for source, mode in (("configMap", 420), ("secret", 420), ("downwardAPI", 420), ("projected", 420)):
        if isinstance(volume.get(source), dict):
            volume[source].setdefault("defaultMode", mode)


def pod_spec_defaults(spec: JSON) -> None:
    """SetDefaults_PodSpec and the per-container/volume defaults: for pods and every pod template."""
    for key, value in (("dnsPolicy", "ClusterFirst"), ("restartPolicy", "Always"),
                       ("schedulerName", "default-scheduler")):
        if not spec.get(key):
            spec[key] = value
    if spec.get("securityContext") is None:
        spec["securityContext"] = {}
    if spec.get("terminationGracePeriodSeconds") is None:
        spec["terminationGracePeriodSeconds"] = 30
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for container in spec.get(key) or []:
            _container(container)
    for volume in spec.get("volumes") or []:
        _volume(volume)
    # v1 conversion keeps the deprecated serviceAccount mirrored
    if spec.get("serviceAccountName") and not spec.get("serviceAccount"):
        spec["serviceAccount"] = spec["serviceAccountName"]
    elif spec.get("serviceAccount") and not spec.get("serviceAccountName"):
        spec["serviceAccountName"] = spec["serviceAccount"]


def _template(obj: JSON, *path: str) -> None:
    node: Any = obj
    for key in path:
        node = node.get(key) if isinstance(node, dict) else None
    if isinstance(node, dict) and isinstance(node.get("spec"), dict):
        pod_spec_defaults(node["spec"])


_QUANTITY_SUFFIXES: tuple[tuple[str, int | Decimal], ...] = (
    ("Ki", 2**10), ("Mi", 2**20), ("Gi", 2**30), ("Ti", 2**40), ("Pi", 2**50), ("Ei", 2**60),
    ("n", Decimal("1e-9")), ("u", Decimal("1e-6")), ("m", Decimal("1e-3")), ("k", 10**3), ("M", 10**6),
    ("G", 10**9), ("T", 10**12), ("P", 10**15), ("E", 10**18))


def parse_quantity(value: Any) -> Decimal | None:
    """A resource.Quantity as a number (None when unparsable)."""
    text = str(value).strip()
    for suffix, factor in _QUANTITY_SUFFIXES:
        if text.endswith(suffix):
            number, scale = text[: -len(suffix)], Decimal(factor)
            break
    else:
        number, scale = text, Decimal(1)
    try:
        return Decimal(number) * scale
    except InvalidOperation:
        return None


def qos_class(spec: JSON) -> str:
    """BestEffort, Guaranteed or Burstable from cpu/memory requests and limits (requests defaulted)."""
    containers = [c for key in ("initContainers", "containers") for c in spec.get(key) or []
                  if isinstance(c, dict)]
    compute = ("cpu", "memory")
    any_set = False
    guaranteed = True
    for container in containers:
        resources = container.get("resources") or {}
        requests = {k: v for k, v in (resources.get("requests") or {}).items() if k in compute}
        limits = {k: v for k, v in (resources.get("limits") or {}).items() if k in compute}
        any_set = any_set or bool(requests) or bool(limits)
        if set(limits) != set(compute) or any(
                parse_quantity(requests.get(k, limits[k])) != parse_quantity(limits[k]) for k in compute):
            guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def _pod(obj: JSON) -> None:
    spec = _dict(obj, "spec")
    for key in ("initContainers", "containers"):
        for container in spec.get(key) or []:
            resources = container.get("resources") if isinstance(container, dict) else None
            if isinstance(resources, dict) and isinstance(resources.get("limits"), dict):
                requests = _dict(resources, "requests")
                for name, quantity in resources["limits"].items():
                    requests.setdefault(name, quantity)
    spec.setdefault("enableServiceLinks", True)
    pod_spec_defaults(spec)
    # admission plugins: ServiceAccount, Priority, DefaultTolerationSeconds
    if not spec.get("serviceAccountName"):
        spec["serviceAccountName"] = spec["serviceAccount"] = "default"
    if spec.get("priority") is None:
        spec["priority"] = SYSTEM_PRIORITIES.get(str(spec.get("priorityClassName", "")), 0)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    tolerations = spec.get("tolerations")
    if not isinstance(tolerations, list):
        tolerations = []
    for key in _DEFAULT_TOLERATIONS:
        if not any(isinstance(t, dict) and t.get("key") in (None, "", key)
                   and t.get("effect") in (None, "", "NoExecute") for t in tolerations):
            tolerations.append({"key": key, "operator": "Exists", "effect": "NoExecute",
                                "tolerationSeconds": 300})
    spec["tolerations"] = tolerations
    status = _dict(obj, "status")
    status.setdefault("phase", "Pending")
    status.setdefault("qosClass", qos_class(spec))


def generate_job_selector(obj: JSON) -> None:
    """Job strategy: label the template with job name and uid and select on the uid (manualSelector off)."""
    metadata = _dict(obj, "metadata")
    spec = _dict(obj, "spec")
    if spec.get("manualSelector"):
        return
    labels = _dict(_dict(_dict(spec, "template"), "metadata"), "labels")
    for key in JOB_NAME_LABELS:
        labels.setdefault(key, metadata.get("name", ""))
    for key in CONTROLLER_UID_LABELS:
        labels.setdefault(key, metadata.get("uid", ""))
    match_labels = _dict(_dict(spec, "selector"), "matchLabels")
    match_labels.setdefault(CONTROLLER_UID_LABELS[1], metadata.get("uid", ""))


def _job(obj: JSON) -> None:
    spec = _dict(obj, "spec")
    metadata = _dict(obj, "metadata")
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
    spec = _dict(obj, "spec")
    spec.setdefault("concurrencyPolicy", "Allow")
    if spec.get("suspend") is None:
        spec["suspend"] = False
    spec.setdefault("successfulJobsHistoryLimit", 3)
    spec.setdefault("failedJobsHistoryLimit", 1)
    _template(obj, "spec", "jobTemplate", "spec", "template")


def _replicas(obj: JSON) -> JSON:
    spec = _dict(obj, "spec")
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    _template(obj, "spec", "template")
    return spec


def _replicaset(obj: JSON) -> None:
    _replicas(obj)


def _deployment(obj: JSON) -> None:
    spec = _replicas(obj)
    strategy = _dict(spec, "strategy")
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = _dict(strategy, "rollingUpdate")
        rolling.setdefault("maxUnavailable", "25%")
        rolling.setdefault("maxSurge", "25%")
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)


def _statefulset(obj: JSON) -> None:
    spec = _replicas(obj)
    spec.setdefault("podManagementPolicy", "OrderedReady")
    strategy = _dict(spec, "updateStrategy")
    if not strategy.get("type"):
        strategy["type"] = "RollingUpdate"
        strategy.setdefault("rollingUpdate", {})
    if strategy["type"] == "RollingUpdate" and isinstance(strategy.get("rollingUpdate"), dict):
        strategy["rollingUpdate"].setdefault("partition", 0)
    spec.setdefault("revisionHistoryLimit", 10)
    retention = _dict(spec, "persistentVolumeClaimRetentionPolicy")
    retention.setdefault("whenDeleted", "Retain")
    retention.setdefault("whenScaled", "Retain")


def _daemonset(obj: JSON) -> None:
    spec = _dict(obj, "spec")
    strategy = _dict(spec, "updateStrategy")
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = _dict(strategy, "rollingUpdate")
        rolling.setdefault("maxUnavailable", 1)
        rolling.setdefault("maxSurge", 0)
    spec.setdefault("revisionHistoryLimit", 10)
    _template(obj, "spec", "template")


def _service(obj: JSON) -> None:
    spec = _dict(obj, "spec")
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
    metadata = _dict(obj, "metadata")
    if metadata.get("name"):
        _dict(metadata, "labels")["kubernetes.io/metadata.name"] = metadata["name"]
    spec = _dict(obj, "spec")
    spec.setdefault("finalizers", ["kubernetes"])
    _dict(obj, "status").setdefault("phase", "Active")


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
        metadata = _dict(obj, "metadata")
        if not metadata.get("labels"):
            metadata["labels"] = dict(labels)


_BY_RESOURCE: dict[str, Callable[[JSON], None]] = {
    "pods": _pod,
    "jobs.batch": _job,
    "cronjobs.batch": _cronjob,
    "replicasets.apps": _replicaset,
    "deployments.apps": _deployment,
    "statefulsets.apps": _statefulset,
    "daemonsets.apps": _daemonset,
    "replicationcontrollers": _replication_controller,
    "podtemplates": _pod_template,
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


def apply_defaults(resource: str, obj: JSON) -> None:
    """Default `obj` of `resource` ("pods", "jobs.batch", ...) in place. Custom resources take the defaults
    of their CRD schema (registered with kubesim.schemas); other unknown resources are left alone."""
    defaulter = _BY_RESOURCE.get(resource)
    if defaulter is not None:
        defaulter(obj)
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
