"""`aiokcm rbac`: the RBAC a set of controllers declares, as the manifests to apply.

A ClusterRole merging every enabled controller's `rbac` PolicyRules (rules on the same API groups, resources
and resource names become one rule with the union of their verbs; groups, resources and verbs sorted, rules
sorted), then the Role the leader election needs on its Lease in the manager's namespace."""

from __future__ import annotations

from collections.abc import Iterable

import yaml

from manager.controller.base import PolicyRule

LEADER_ELECTION_RULES = (
    PolicyRule(("coordination.k8s.io",), ("leases",), ("get", "list", "watch", "create", "update", "patch")),
)


def merge_rules(rules: Iterable[PolicyRule]) -> list[PolicyRule]:
    """One rule per (API groups, resources, resource names), verbs united; everything sorted."""
    merged: dict[tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]], set[str]] = {}
    for rule in rules:
        key = (
            tuple(sorted(set(rule.api_groups))),
            tuple(sorted(set(rule.resources))),
            tuple(sorted(set(rule.resource_names))),
        )
        merged.setdefault(key, set()).update(rule.verbs)
    return [
        PolicyRule(groups, resources, tuple(sorted(verbs)), names)
        for (groups, resources, names), verbs in sorted(merged.items())
    ]


def rbac_manifests(
    rules: Iterable[PolicyRule],
    *,
    name: str = "aiokcm",
    namespace: str = "kube-system",
) -> str:
    """The ClusterRole and the leader-election Role as one multi-document YAML string."""
    cluster_role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": [rule.to_dict() for rule in merge_rules(rules)],
    }
    leader_role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": f"{name}-leader-election", "namespace": namespace},
        "rules": [rule.to_dict() for rule in merge_rules(LEADER_ELECTION_RULES)],
    }
    return yaml.safe_dump_all([cluster_role, leader_role], sort_keys=False)
