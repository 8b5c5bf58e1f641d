"""The generated roles split into single permissions (one verb on one resource of one API group, per role), a
copy of the roles without one of them, and whether the other roles still grant it (then dropping it cannot
fail anything: the manager is one ServiceAccount holding the union of its roles)."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

ROLE_KINDS = ("ClusterRole", "Role")


@dataclass(frozen=True, order=True)
class Permission:
    role: str
    group: str
    resource: str
    verb: str
    names: tuple[str, ...] = ()

    def __str__(self) -> str:
        what = f"{self.resource}.{self.group}" if self.group else self.resource
        named = f" {list(self.names)}" if self.names else ""
        return f"{self.role}: {self.verb} {what}{named}"


def _split(role: str, rule: dict[str, Any]) -> list[Permission]:
    names = tuple(rule.get("resourceNames") or ())
    return [
        Permission(role, group, resource, verb, names)
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    ]


def permissions(objects: list[dict[str, Any]]) -> list[Permission]:
    found = [
        permission
        for obj in objects
        if obj["kind"] in ROLE_KINDS
        for rule in obj.get("rules") or ()
        for permission in _split(obj["metadata"]["name"], rule)
    ]
    return sorted(set(found))


def without(objects: list[dict[str, Any]], dropped: Permission) -> list[dict[str, Any]]:
    """`objects` with `dropped` taken out of its role (the role's rules rewritten one permission each)."""
    result = copy.deepcopy(objects)
    for obj in result:
        if obj["kind"] in ROLE_KINDS and obj["metadata"]["name"] == dropped.role:
            kept = [p for p in permissions([obj]) if p != dropped]
            obj["rules"] = [_rule(p) for p in kept]
    return result


def _rule(p: Permission) -> dict[str, Any]:
    rule: dict[str, Any] = {"apiGroups": [p.group], "resources": [p.resource], "verbs": [p.verb]}
    if p.names:
        rule["resourceNames"] = list(p.names)
    return rule


def covers(granted: Permission, wanted: Permission) -> bool:
    def matches(have: str, want: str) -> bool:
        return have in ("*", want)

    return (
        matches(granted.group, wanted.group)
        and matches(granted.resource, wanted.resource)
        and matches(granted.verb, wanted.verb)
        and (not granted.names or (set(wanted.names) <= set(granted.names) and bool(wanted.names)))
    )


def granted_elsewhere(all_permissions: list[Permission], dropped: Permission) -> Permission | None:
    """Another role's permission that grants everything `dropped` does, if any."""
    for other in all_permissions:
        if other != dropped and other.role != dropped.role and covers(other, dropped):
            return other
    return None
