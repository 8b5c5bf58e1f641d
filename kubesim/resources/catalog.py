"""The registry of served resource types: built-ins plus the ones established CRDs add."""

from __future__ import annotations

import re
from collections.abc import Iterator

from kubesim.resources.types import BUILTIN_TYPES, GROUP_ORDER, ResourceType

_KUBE_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Kubernetes version order (preferred first): GA before beta before alpha, higher numbers first, then
    anything else alphabetically."""
    match = _KUBE_VERSION.match(version)
    if match is None:
        return (3, 0, 0, version)
    stability = {None: 0, "beta": 1, "alpha": 2}[match.group(2)]
    return (stability, -int(match.group(1)), -int(match.group(3) or 0), version)


class Registry:
    def __init__(self) -> None:
        self._by_gvr: dict[tuple[str, str, str], ResourceType] = {}
        self._group_versions: dict[str, list[str]] = {}
        self.generation = 0  # bumped on every change so caches (discovery) can be rebuilt lazily
        for rtype in BUILTIN_TYPES:
            self.add(rtype)

    def add(self, rtype: ResourceType) -> None:
        self._by_gvr[(rtype.group, rtype.version, rtype.plural)] = rtype
        versions = self._group_versions.setdefault(rtype.group, [])
        if rtype.version not in versions:
            versions.append(rtype.version)
            versions.sort(key=version_priority)
        self.generation += 1

    def remove_group_resource(self, group: str, plural: str) -> None:
        for key in [k for k in self._by_gvr if k[0] == group and k[2] == plural]:
            del self._by_gvr[key]
        for group_name in list(self._group_versions):
            served = {k[1] for k in self._by_gvr if k[0] == group_name}
            self._group_versions[group_name] = [v for v in self._group_versions[group_name] if v in served]
            if not self._group_versions[group_name]:
                del self._group_versions[group_name]
        self.generation += 1

    def get(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._by_gvr.get((group, version, plural))

    def find(self, group: str, plural: str) -> ResourceType | None:
        """Any served version of group/plural, the preferred one first."""
        for version in self.versions(group):
            found = self._by_gvr.get((group, version, plural))
            if found is not None:
                return found
        return None

    def by_key(self, key: str) -> ResourceType | None:
        """The type whose own group stores under `key` ("jobs.batch")."""
        plural, _, group = key.partition(".")
        return self.find(group, plural)

    def groups(self) -> list[str]:
        known = [g for g in GROUP_ORDER if g in self._group_versions]
        return known + sorted(g for g in self._group_versions if g not in GROUP_ORDER)

    def versions(self, group: str) -> list[str]:
        return list(self._group_versions.get(group, []))

    def has_group_version(self, group: str, version: str) -> bool:
        return version in self._group_versions.get(group, [])

    def resources(self, group: str, version: str) -> list[ResourceType]:
        return [t for (g, v, _), t in self._by_gvr.items() if g == group and v == version]

    def __iter__(self) -> Iterator[ResourceType]:
        return iter(list(self._by_gvr.values()))

    def openapi_types(self) -> list[ResourceType]:
        """Every served type (kubesim.server.openapi builds /openapi/v2 and /openapi/v3 from these)."""
        return list(self._by_gvr.values())
