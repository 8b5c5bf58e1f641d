"""The simulated scheduler: binds pending pods to the least-loaded node, breaking ties round-robin.

It only decides; the kubelet module performs the binding write (spec.nodeName plus the PodScheduled
condition), so both share one store subscription and one event-processing loop.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


class Scheduler:
    """Tracks how many live pods each node runs; `pick` returns the node for the next pod."""

    def __init__(self, nodes: Iterable[str]) -> None:
        self._load: dict[str, int] = dict.fromkeys(nodes, 0)
        self._order = list(self._load)
        self._cursor = 0
        self._placed: dict[str, str] = {}  # pod uid -> node

    @property
    def nodes(self) -> list[str]:
        return list(self._order)

    def has_node(self, name: str) -> bool:
        return name in self._load

    def load(self, node: str) -> int:
        return self._load.get(node, 0)

    def pick(self, feasible: Iterable[str] | None = None) -> str | None:
        """The least-loaded feasible node; among equals the next one after the previous pick.

        None when no node is feasible (or there are no nodes at all)."""
        allowed = None if feasible is None else set(feasible)
        count = len(self._order)
        best: str | None = None
        best_index = 0
        for step in range(count):
            index = (self._cursor + step) % count
            node = self._order[index]
            if allowed is not None and node not in allowed:
                continue
            if best is None or self._load[node] < self._load[best]:
                best, best_index = node, index
        if best is None:
            return None
        self._cursor = (best_index + 1) % count
        return best

    def place(self, uid: str, node: str) -> None:
        """Count a pod on `node` (a bind we made, or a pod found already bound)."""
        if uid in self._placed or node not in self._load:
            return
        self._placed[uid] = node
        self._load[node] += 1

    def release(self, uid: str) -> None:
        """The pod no longer occupies its node (finished or removed)."""
        node = self._placed.pop(uid, None)
        if node is not None:
            self._load[node] -= 1


# -- feasibility: what the default scheduler's filter plugins check, reduced to the common fields ------------

Obj = dict[str, Any]


def _expression_matches(expr: Obj, labels: dict[str, str]) -> bool:
    key, operator, values = expr.get("key", ""), expr.get("operator", ""), expr.get("values") or []
    present = key in labels
    if operator == "In":
        return present and labels[key] in values
    if operator == "NotIn":
        return not present or labels[key] not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt") and present and len(values) == 1:
        try:
            have, want = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return have > want if operator == "Gt" else have < want
    return False


def _required_affinity_matches(pod: Obj, node: Obj) -> bool:
    affinity = pod.get("spec", {}).get("affinity", {}).get("nodeAffinity", {})
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if not required:
        return True
    labels = node["metadata"].get("labels") or {}
    fields = {"metadata.name": node["metadata"]["name"]}
    for term in required.get("nodeSelectorTerms") or []:  # terms are ORed, expressions within one ANDed
        exprs = term.get("matchExpressions") or []
        field_exprs = term.get("matchFields") or []
        if not exprs and not field_exprs:
            continue
        if all(_expression_matches(e, labels) for e in exprs) and all(
            _expression_matches(e, fields) for e in field_exprs
        ):
            return True
    return False


def _tolerated(taint: Obj, tolerations: list[Obj]) -> bool:
    for toleration in tolerations:
        if toleration.get("effect") and toleration["effect"] != taint.get("effect"):
            continue
        if toleration.get("operator", "Equal") == "Exists":
            if not toleration.get("key") or toleration["key"] == taint.get("key"):
                return True
        elif toleration.get("key") == taint.get("key") and toleration.get("value", "") == taint.get(
            "value", ""
        ):
            return True
    return False


def unfit_reason(pod: Obj, node: Obj) -> str | None:
    """Why `pod` cannot go to `node` (the scheduler's event wording), or None when it fits."""
    spec = pod.get("spec", {})
    if node.get("spec", {}).get("unschedulable"):
        return "node(s) were unschedulable"
    labels = node["metadata"].get("labels") or {}
    selector: dict[str, str] = spec.get("nodeSelector") or {}
    if any(labels.get(k) != v for k, v in selector.items()) or not _required_affinity_matches(pod, node):
        return "node(s) didn't match Pod's node affinity/selector"
    tolerations = spec.get("tolerations") or []
    for taint in node.get("spec", {}).get("taints") or []:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not _tolerated(taint, tolerations):
            return "node(s) had untolerated taint(s)"
    return None


def unschedulable_message(total: int, reasons: list[str]) -> str:
    """`0/3 nodes are available: 1 node(s) were unschedulable, 2 node(s) didn't match ...`."""
    if total == 0:
        return "no nodes available to schedule pods"
    counts: dict[str, int] = {}
    for reason in reasons:
        counts[reason] = counts.get(reason, 0) + 1
    parts = ", ".join(f"{n} {reason}" for reason, n in sorted(counts.items()))
    return f"0/{total} nodes are available: {parts}."
