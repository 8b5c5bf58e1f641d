"""Pod predicates, controller references, pods from templates, label selectors and RFC3339 times.

Everything here works on raw JSON dicts (as decoded by orjson) and never mutates its inputs.
Behaviour follows kube-controller-manager's pkg/controller/controller_utils.go (`IsPodActive`,
`FilterActivePods`, `GetPodFromTemplate`) and pkg/api/v1/pod/util.go (`IsPodReady`, `IsPodAvailable`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from functools import lru_cache
from typing import Any

from manager import Indexer

Obj = dict[str, Any]

DELETION_COST_ANNOTATION = "controller.kubernetes.io/pod-deletion-cost"


# -------------------- times


@lru_cache(maxsize=65536)
def parse_time(value: str | None) -> float | None:
    """Parse RFC3339 (metav1.Time or MicroTime) to epoch seconds; None/"" (the zero time) → None."""
    if not value:
        return None
    return datetime.fromisoformat(value.replace("z", "Z")).timestamp()


# -------------------- predicates


def meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    m: Mapping[str, Any] = obj.get("metadata") or {}
    return m


def is_terminating(obj: Mapping[str, Any]) -> bool:
    """True once the object carries a deletionTimestamp."""
    return bool(meta(obj).get("deletionTimestamp"))


def pod_phase(pod: Mapping[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def is_active(pod: Mapping[str, Any]) -> bool:
    """Active = not Succeeded, not Failed and not being deleted (controller.IsPodActive)."""
    return pod_phase(pod) not in ("Succeeded", "Failed") and not is_terminating(pod)


def filter_active(pods: Iterable[Obj]) -> list[Obj]:
    return [p for p in pods if is_active(p)]


def ready_condition(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "Ready":
            c: Mapping[str, Any] = cond
            return c
    return None


def is_ready(pod: Mapping[str, Any]) -> bool:
    cond = ready_condition(pod)
    return cond is not None and cond.get("status") == "True"


def ready_since(pod: Mapping[str, Any]) -> float | None:
    """lastTransitionTime of the Ready=True condition (epoch seconds); None when not ready or unset."""
    cond = ready_condition(pod)
    if cond is None or cond.get("status") != "True":
        return None
    return parse_time(cond.get("lastTransitionTime"))


def is_available(pod: Mapping[str, Any], min_ready_seconds: int, now: float) -> bool:
    """Ready, and (minReadySeconds == 0 or ready since strictly more than minReadySeconds before `now`)."""
    if not is_ready(pod):
        return False
    if min_ready_seconds == 0:
        return True
    since = ready_since(pod)
    return since is not None and since + min_ready_seconds < now


def max_container_restarts(pod: Mapping[str, Any]) -> tuple[int, int]:
    """(max restartCount of regular containers, max of sidecar init containers)."""
    status = pod.get("status") or {}
    regular = max((int(c.get("restartCount") or 0) for c in status.get("containerStatuses") or ()), default=0)
    sidecar_names = {
        c.get("name")
        for c in (pod.get("spec") or {}).get("initContainers") or ()
        if c.get("restartPolicy") == "Always"
    }
    sidecar = max(
        (
            int(c.get("restartCount") or 0)
            for c in status.get("initContainerStatuses") or ()
            if c.get("name") in sidecar_names
        ),
        default=0,
    )
    return regular, sidecar


def node_name(pod: Mapping[str, Any]) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


# -------------------- owner references


def new_controller_ref(owner: Mapping[str, Any], api_version: str, kind: str) -> Obj:
    """The ownerReference a controller puts on what it creates (metav1.NewControllerRef)."""
    m = meta(owner)
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": m["name"],
        "uid": m["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


# -------------------- pods from templates

_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def is_valid_name_prefix(prefix: str) -> bool:
    """apimachinery's prefix check: the last two characters of a dash-terminated prefix are replaced by `a`,
    then the result must be a DNS-1123 subdomain (≤ 253 characters)."""
    if len(prefix) > 1 and prefix.endswith("-"):
        prefix = prefix[:-2] + "a"
    return len(prefix) <= 253 and _DNS1123_SUBDOMAIN.fullmatch(prefix) is not None


def pods_prefix(controller_name: str) -> str:
    """generateName for a controller's pods: `<name>-`, or `<name>` when that is not a valid prefix."""
    prefix = f"{controller_name}-"
    return prefix if is_valid_name_prefix(prefix) else controller_name


class NoLabelsError(ValueError):
    def __init__(self) -> None:
        super().__init__("unable to create pods, no labels")


def pod_from_template(
    template: Mapping[str, Any],
    owner_name: str,
    controller_ref: Mapping[str, Any] | None,
    *,
    extra_finalizers: Iterable[str] = (),
) -> Obj:
    """Build a pod from a PodTemplateSpec: labels/annotations/finalizers copied, generateName `<owner>-`,
    ownerReferences = [controller_ref], spec deep-copied. Raises NoLabelsError for a template without labels
    (the real PodControl refuses to create such pods)."""
    tmeta = template.get("metadata") or {}
    labels = dict(tmeta.get("labels") or {})
    if not labels:
        raise NoLabelsError()
    metadata: Obj = {"generateName": pods_prefix(owner_name), "labels": labels}
    annotations = tmeta.get("annotations")
    if annotations:
        metadata["annotations"] = dict(annotations)
    finalizers = list(tmeta.get("finalizers") or ())
    finalizers.extend(f for f in extra_finalizers if f not in finalizers)
    if finalizers:
        metadata["finalizers"] = finalizers
    if controller_ref is not None:
        metadata["ownerReferences"] = [dict(controller_ref)]
    spec = _deep_copy(template.get("spec") or {})
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def _deep_copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _deep_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_deep_copy(v) for v in value]
    return value


# -------------------- label selectors


class InvalidSelectorError(ValueError):
    pass


class Selector:
    """A compiled metav1.LabelSelector. Build with `Selector.from_label_selector(spec)`."""

    __slots__ = ("_equal", "_everything", "_exprs", "_nothing")

    def __init__(
        self,
        equal: dict[str, str],
        exprs: list[tuple[str, str, frozenset[str]]],
        *,
        nothing: bool = False,
    ) -> None:
        self._equal = equal
        self._exprs = exprs
        self._nothing = nothing
        self._everything = not nothing and not equal and not exprs

    @classmethod
    def from_label_selector(cls, spec: Mapping[str, Any] | None) -> Selector:
        """nil → matches nothing; {} → matches everything; invalid operator/values → InvalidSelectorError."""
        if spec is None:
            return cls({}, [], nothing=True)
        equal = {str(k): str(v) for k, v in (spec.get("matchLabels") or {}).items()}
        exprs: list[tuple[str, str, frozenset[str]]] = []
        for expr in spec.get("matchExpressions") or ():
            key, op = str(expr.get("key", "")), str(expr.get("operator", ""))
            values = expr.get("values") or []
            if op in ("In", "NotIn"):
                if not values:
                    raise InvalidSelectorError(
                        f"for 'in', 'notin' operators, values set can't be empty ({key})"
                    )
            elif op in ("Exists", "DoesNotExist"):
                if values:
                    raise InvalidSelectorError(
                        f"values set must be empty for exists and does not exist ({key})"
                    )
            else:
                raise InvalidSelectorError(f"{op!r} is not a valid label selector operator")
            exprs.append((key, op, frozenset(str(v) for v in values)))
        return cls(equal, exprs)

    @classmethod
    def from_set(cls, labels: Mapping[str, str] | None) -> Selector:
        """Equality selector for a label set (an empty set matches everything)."""
        return cls(dict(labels or {}), [])

    @property
    def empty(self) -> bool:
        """True for the selector that matches everything (an empty LabelSelector)."""
        return self._everything

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        if self._nothing:
            return False
        if self._everything:
            return True
        labels = labels or {}
        for k, v in self._equal.items():
            if labels.get(k) != v:
                return False
        for key, op, values in self._exprs:
            present = key in labels
            if op == "In":
                if not present or labels[key] not in values:
                    return False
            elif op == "NotIn":
                if present and labels[key] in values:
                    return False
            elif op == "Exists":
                if not present:
                    return False
            elif present:  # DoesNotExist
                return False
        return True


def labels_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    labels: Mapping[str, str] = meta(obj).get("labels") or {}
    return labels


def ensure_indexer(indexer: Indexer, name: str, func: Callable[[Obj], list[str]]) -> None:
    """Add the named index to a shared informer's indexer unless the very same function is already there
    (several controllers may ask for the same index on a shared informer; a clash of names is a bug)."""
    existing = indexer.get_indexers().get(name)
    if existing is None:
        indexer.add_indexers({name: func})
    elif existing is not func:
        raise ValueError(f"indexer {name!r} is already registered with another function")
