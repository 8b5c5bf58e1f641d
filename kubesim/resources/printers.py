"""Table columns per type, as kubectl shows them: the server-side printers of the built-in types, the
additionalPrinterColumns of custom resources, and Name + Created At for everything else."""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable
from typing import Any

from kubesim.resources.crd_columns import column_cell
from kubesim.resources.types import ResourceType

JSON = dict[str, Any]
Column = tuple[str, str, str, int, Callable[[JSON], Any]]  # name, type, format, priority, cell


def _get(obj: JSON, path: str, default: Any = None) -> Any:
    current: Any = obj
    for part in path.split("."):
        if not isinstance(current, dict):
            return default
        current = current.get(part)
    return default if current is None else current


def human_duration(seconds: float) -> str:
    """apimachinery's duration.HumanDuration: 45s, 3m20s, 12m, 5h3m, 20h, 3d4h, 12d, 2y30d, 9y; a time more
    than a second in the future is "<invalid>" (a second of clock skew reads as 0s)."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes, hours = s // 60, s // 3600
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if hours < 3:
        return f"{minutes}m"
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d{hours % 24}h" if hours % 24 else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        years, days = hours // 24 // 365, (hours // 24) % 365
        return f"{years}y{days}d" if days else f"{years}y"
    return f"{hours // 24 // 365}y"


def _age(obj: JSON) -> str:
    stamp = _get(obj, "metadata.creationTimestamp", "")
    if not stamp:
        return "<unknown>"
    try:
        created = datetime.datetime.strptime(str(stamp), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.UTC)
    except ValueError:
        return "<invalid>"
    return human_duration(time.time() - created.timestamp())


def _pod_ready(pod: JSON) -> str:
    statuses = _get(pod, "status.containerStatuses", []) or []
    total = len(_get(pod, "spec.containers", []) or [])
    ready = sum(1 for s in statuses if s.get("ready"))
    return f"{ready}/{total}"


def _pod_status(pod: JSON) -> str:
    if _get(pod, "metadata.deletionTimestamp"):
        return "Terminating"
    for status in _get(pod, "status.containerStatuses", []) or []:
        state = status.get("state") or {}
        if "waiting" in state and state["waiting"].get("reason"):
            return str(state["waiting"]["reason"])
        if "terminated" in state and state["terminated"].get("reason"):
            return str(state["terminated"]["reason"])
    return str(_get(pod, "status.phase", "Pending"))


def _restarts(pod: JSON) -> int:
    return sum(int(s.get("restartCount", 0)) for s in _get(pod, "status.containerStatuses", []) or [])


def _containers(obj: JSON, spec_path: str) -> str:
    return ",".join(c.get("name", "") for c in _get(obj, spec_path, []) or [])


def _images(obj: JSON, spec_path: str) -> str:
    return ",".join(c.get("image", "") for c in _get(obj, spec_path, []) or [])


def _selector(obj: JSON) -> str:
    labels = _get(obj, "spec.selector.matchLabels", {}) or {}
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items())) or "<none>"


def _job_status(job: JSON) -> str:
    for cond in _get(job, "status.conditions", []) or []:
        if cond.get("status") == "True" and cond.get("type") in ("Complete", "Failed", "Suspended"):
            return str(cond["type"])
    return "Running"


def _parse(stamp: Any) -> float | None:
    try:
        parsed = datetime.datetime.strptime(str(stamp), "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        return None
    return parsed.replace(tzinfo=datetime.UTC).timestamp()


def _job_duration(job: JSON) -> str:
    start = _parse(_get(job, "status.startTime"))
    if start is None:
        return ""
    end = _parse(_get(job, "status.completionTime")) or time.time()
    return human_duration(end - start)


def _node_status(node: JSON) -> str:
    status = "Unknown"
    for cond in _get(node, "status.conditions", []) or []:
        if cond.get("type") == "Ready":
            status = "Ready" if cond.get("status") == "True" else "NotReady"
    return status + (",SchedulingDisabled" if _get(node, "spec.unschedulable") else "")


def _event_last_seen(event: JSON) -> str:
    stamp = (
        _get(event, "lastTimestamp")
        or _get(event, "deprecatedLastTimestamp")
        or _get(event, "eventTime")
        or _get(event, "metadata.creationTimestamp")
    )
    return _age({"metadata": {"creationTimestamp": str(stamp)[:19] + "Z"}}) if stamp else "<unknown>"


def _event_object(event: JSON) -> str:
    ref = _get(event, "involvedObject") or _get(event, "regarding") or {}
    return f"{str(ref.get('kind', '')).lower()}/{ref.get('name', '')}"


def _service_ports(service: JSON) -> str:
    ports = _get(service, "spec.ports", []) or []
    return ",".join(f"{p.get('port')}/{p.get('protocol', 'TCP')}" for p in ports) or "<none>"


def _data_count(obj: JSON) -> int:
    return len(_get(obj, "data", {}) or {}) + len(_get(obj, "binaryData", {}) or {})


_NAME: Column = ("Name", "string", "name", 0, lambda o: _get(o, "metadata.name", ""))
_AGE: Column = ("Age", "string", "", 0, _age)
_TEMPLATE = "spec.template.spec.containers"
# what kubectl prints after AGE for every workload with a pod template: containers, images, selector (wide)
_WORKLOAD_TAIL: list[Column] = [
    _AGE,
    ("Containers", "string", "", 1, lambda o: _containers(o, _TEMPLATE)),
    ("Images", "string", "", 1, lambda o: _images(o, _TEMPLATE)),
    ("Selector", "string", "", 1, _selector),
]

PRINTERS: dict[str, list[Column]] = {
    "pods": [
        _NAME,
        ("Ready", "string", "", 0, _pod_ready),
        ("Status", "string", "", 0, _pod_status),
        ("Restarts", "string", "", 0, lambda o: str(_restarts(o))),
        _AGE,
        ("IP", "string", "", 1, lambda o: _get(o, "status.podIP", "<none>")),
        ("Node", "string", "", 1, lambda o: _get(o, "spec.nodeName", "<none>")),
    ],
    "jobs": [
        _NAME,
        ("Status", "string", "", 0, _job_status),
        (
            "Completions",
            "string",
            "",
            0,
            lambda o: f"{_get(o, 'status.succeeded', 0)}/{_get(o, 'spec.completions', 1)}",
        ),
        ("Duration", "string", "", 0, _job_duration),
        *_WORKLOAD_TAIL,
    ],
    "cronjobs": [
        _NAME,
        ("Schedule", "string", "", 0, lambda o: _get(o, "spec.schedule", "")),
        ("Suspend", "boolean", "", 0, lambda o: bool(_get(o, "spec.suspend", False))),
        ("Active", "integer", "", 0, lambda o: len(_get(o, "status.active", []) or [])),
        ("Last Schedule", "string", "", 0, lambda o: _get(o, "status.lastScheduleTime", "<none>")),
        _AGE,
    ],
    "replicasets": [
        _NAME,
        ("Desired", "integer", "", 0, lambda o: _get(o, "spec.replicas", 1)),
        ("Current", "integer", "", 0, lambda o: _get(o, "status.replicas", 0)),
        ("Ready", "integer", "", 0, lambda o: _get(o, "status.readyReplicas", 0)),
        *_WORKLOAD_TAIL,
    ],
    "deployments": [
        _NAME,
        (
            "Ready",
            "string",
            "",
            0,
            lambda o: f"{_get(o, 'status.readyReplicas', 0)}/{_get(o, 'spec.replicas', 1)}",
        ),
        ("Up-to-date", "integer", "", 0, lambda o: _get(o, "status.updatedReplicas", 0)),
        ("Available", "integer", "", 0, lambda o: _get(o, "status.availableReplicas", 0)),
        *_WORKLOAD_TAIL,
    ],
    "nodes": [
        _NAME,
        ("Status", "string", "", 0, _node_status),
        ("Roles", "string", "", 0, lambda o: "<none>"),
        _AGE,
        ("Version", "string", "", 0, lambda o: _get(o, "status.nodeInfo.kubeletVersion", "")),
    ],
    "namespaces": [_NAME, ("Status", "string", "", 0, lambda o: _get(o, "status.phase", "Active")), _AGE],
    "events": [
        ("Last Seen", "string", "", 0, _event_last_seen),
        ("Type", "string", "", 0, lambda o: _get(o, "type", "")),
        ("Reason", "string", "", 0, lambda o: _get(o, "reason", "")),
        ("Object", "string", "", 0, _event_object),
        ("Message", "string", "", 0, lambda o: _get(o, "message", "") or _get(o, "note", "")),
        ("Name", "string", "name", 1, lambda o: _get(o, "metadata.name", "")),
    ],
    "services": [
        _NAME,
        ("Type", "string", "", 0, lambda o: _get(o, "spec.type", "ClusterIP")),
        ("Cluster-IP", "string", "", 0, lambda o: _get(o, "spec.clusterIP", "<none>")),
        (
            "External-IP",
            "string",
            "",
            0,
            lambda o: ",".join(_get(o, "spec.externalIPs", []) or []) or "<none>",
        ),
        ("Port(s)", "string", "", 0, _service_ports),
        _AGE,
    ],
    "configmaps": [_NAME, ("Data", "integer", "", 0, _data_count), _AGE],
    "secrets": [
        _NAME,
        ("Type", "string", "", 0, lambda o: _get(o, "type", "Opaque")),
        ("Data", "integer", "", 0, _data_count),
        _AGE,
    ],
    "leases": [_NAME, ("Holder", "string", "", 0, lambda o: _get(o, "spec.holderIdentity", "")), _AGE],
}
DEFAULT_COLUMNS: list[Column] = [
    _NAME,
    ("Created At", "date", "", 0, lambda o: _get(o, "metadata.creationTimestamp", "")),
]


def _crd_columns(crd: JSON, version: str) -> list[Column]:
    """Name, then the version's additionalPrinterColumns; without any, Age (the apiextensions-apiserver's
    default column, where built-in types without a printer get Created At)."""
    for served in _get(crd, "spec.versions", []) or []:
        if served.get("name") == version and served.get("additionalPrinterColumns"):
            return [_NAME] + [
                (
                    str(col.get("name", "")),
                    str(col.get("type", "string")),
                    str(col.get("format", "")),
                    int(col.get("priority", 0)),
                    column_cell(str(col.get("jsonPath", "")), str(col.get("type", "string")), human_duration),
                )
                for col in served["additionalPrinterColumns"]
            ]
    return [_NAME, ("Age", "date", "", 0, _age)]


def columns_for(rtype: ResourceType) -> list[Column]:
    if rtype.crd is not None:
        return _crd_columns(rtype.crd, rtype.version)
    return PRINTERS.get(rtype.printer, DEFAULT_COLUMNS)
