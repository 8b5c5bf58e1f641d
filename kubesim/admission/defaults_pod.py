"""Pod defaulting: SetDefaults_PodSpec and the container/probe/volume defaults (for pods and pod templates),
plus what only pods get: SetDefaults_Pod, the create-time status (phase, qosClass) and the default
admission plugins (ServiceAccount, Priority, DefaultTolerationSeconds)."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

import orjson

from kubesim.schema.nodes import ValueMemo

JSON = dict[str, Any]

SYSTEM_PRIORITIES = {"system-cluster-critical": 2000000000, "system-node-critical": 2000001000}
_DEFAULT_TOLERATIONS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")


def ensure_dict(parent: JSON, key: str) -> JSON:
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
    for key, value in (
        ("timeoutSeconds", 1),
        ("periodSeconds", 10),
        ("successThreshold", 1),
        ("failureThreshold", 3),
    ):
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
    for key, value in (
        ("dnsPolicy", "ClusterFirst"),
        ("restartPolicy", "Always"),
        ("schedulerName", "default-scheduler"),
    ):
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


_QUANTITY_SUFFIXES: tuple[tuple[str, int | Decimal], ...] = (
    *((f"{prefix}i", 1024**power) for power, prefix in enumerate("KMGTPE", 1)),  # Ki = 2**10 ... Ei = 2**60
    ("n", Decimal("1e-9")),
    ("u", Decimal("1e-6")),
    ("m", Decimal("1e-3")),
    *((prefix, 1000**power) for power, prefix in enumerate("kMGTPE", 1)),  # k = 10**3 ... E = 10**18
)


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
    containers = [
        c for key in ("initContainers", "containers") for c in spec.get(key) or [] if isinstance(c, dict)
    ]
    compute = ("cpu", "memory")
    any_set = False
    guaranteed = True
    for container in containers:
        resources = container.get("resources") or {}
        requests = {k: v for k, v in (resources.get("requests") or {}).items() if k in compute}
        limits = {k: v for k, v in (resources.get("limits") or {}).items() if k in compute}
        any_set = any_set or bool(requests) or bool(limits)
        if set(limits) != set(compute) or any(
            parse_quantity(requests.get(k, limits[k])) != parse_quantity(limits[k]) for k in compute
        ):
            guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


_SPECS = ValueMemo()
_POD_SPEC = object()  # memo owner: pod specs defaulted as pods


def pod_defaults(obj: JSON) -> None:
    """Defaulting and the create-time admission plugins of a whole pod."""
    pod_defaults_only(obj)
    pod_admission(obj)


def pod_defaults_only(obj: JSON) -> None:
    """SetDefaults_Pod and the spec/container defaults, plus the create-time status. The spec's defaults are
    a function of the spec alone, remembered per spec (the pods of one template are defaulted once)."""
    spec = ensure_dict(obj, "spec")
    key, known = _SPECS.lookup(_POD_SPEC, None, spec)
    if known is not None:
        spec = obj["spec"] = orjson.loads(known[0])
        qos = known[1]
    else:
        _pod_spec_defaults(spec)
        qos = qos_class(spec)
        if key is not None:
            _SPECS.store(key, _POD_SPEC, (orjson.dumps(spec), qos))
    status = ensure_dict(obj, "status")
    status.setdefault("phase", "Pending")
    status.setdefault("qosClass", qos)


def pod_admission(obj: JSON) -> None:
    """What the default admission plugins add to a pod being created: ServiceAccount, Priority and
    DefaultTolerationSeconds. They run after the write's managedFields are computed, so the writer does not
    own these fields (as upstream, where the field manager runs before mutating admission)."""
    spec = ensure_dict(obj, "spec")
    if not spec.get("serviceAccountName"):
        spec["serviceAccountName"] = spec["serviceAccount"] = "default"
    if spec.get("priority") is None:
        spec["priority"] = SYSTEM_PRIORITIES.get(str(spec.get("priorityClassName", "")), 0)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    tolerations = spec.get("tolerations")
    if not isinstance(tolerations, list):
        tolerations = []
    for key in _DEFAULT_TOLERATIONS:
        if not any(
            isinstance(t, dict)
            and t.get("key") in (None, "", key)
            and t.get("effect") in (None, "", "NoExecute")
            for t in tolerations
        ):
            tolerations.append(
                {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
            )
    spec["tolerations"] = tolerations


def _pod_spec_defaults(spec: JSON) -> None:
    for key in ("initContainers", "containers"):
        for container in spec.get(key) or []:
            resources = container.get("resources") if isinstance(container, dict) else None
            if isinstance(resources, dict) and isinstance(resources.get("limits"), dict):
                requests = ensure_dict(resources, "requests")
                for name, quantity in resources["limits"].items():
                    requests.setdefault(name, quantity)
    spec.setdefault("enableServiceLinks", True)
    if spec.get("hostNetwork"):  # with host networking every container port is a host port
        for key in ("initContainers", "containers"):
            for container in spec.get(key) or []:
                for port in (container.get("ports") or []) if isinstance(container, dict) else []:
                    if isinstance(port, dict) and not port.get("hostPort"):
                        port["hostPort"] = port.get("containerPort")
    pod_spec_defaults(spec)
