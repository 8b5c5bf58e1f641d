"""RBAC PolicyRule matching (upstream `pkg/apis/rbac/v1/evaluation_helpers.go`): pure functions over the
rule as stored (rbac.authorization.k8s.io/v1 JSON) and the request's attributes."""

from __future__ import annotations

from typing import Any

from kubesim.auth.attributes import Attributes

JSON = dict[str, Any]
ALL = "*"


def _items(rule: JSON, key: str) -> list[str]:
    value = rule.get(key)
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def verb_matches(rule: JSON, verb: str) -> bool:
    verbs = _items(rule, "verbs")
    return ALL in verbs or verb in verbs


def group_matches(rule: JSON, group: str) -> bool:
    groups = _items(rule, "apiGroups")
    return ALL in groups or group in groups


def resource_matches(rule: JSON, resource: str, subresource: str) -> bool:
    """`*` matches everything, `pods/log` one subresource, `*/scale` a subresource of any resource."""
    combined = f"{resource}/{subresource}" if subresource else resource
    for wanted in _items(rule, "resources"):
        if wanted in (ALL, combined):
            return True
        if subresource and wanted == f"*/{subresource}":
            return True
    return False


def name_matches(rule: JSON, name: str) -> bool:
    names = _items(rule, "resourceNames")
    return not names or name in names


def url_matches(rule: JSON, path: str) -> bool:
    for wanted in _items(rule, "nonResourceURLs"):
        if wanted in (ALL, path):
            return True
        if wanted.endswith(ALL) and path.startswith(wanted[:-1]):
            return True
    return False


def rule_allows(rule: JSON, attrs: Attributes) -> bool:
    if not verb_matches(rule, attrs.verb):
        return False
    if not attrs.resource_request:
        return url_matches(rule, attrs.path)
    return (
        group_matches(rule, attrs.group)
        and resource_matches(rule, attrs.resource, attrs.subresource)
        and name_matches(rule, attrs.name)
    )
