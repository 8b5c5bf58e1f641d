"""What the garbage collector knows of the served resources: which ones to monitor, and how an
ownerReference's (apiVersion, kind) maps to a resource (upstream: garbagecollector.go
`GetDeletableResources`, graph_builder.go `DefaultIgnoredResources`, operations.go `apiResource` over the
RESTMapper)."""

from __future__ import annotations

from collections.abc import Mapping

from manager import Discovery, GroupVersionResource

# Never monitored: events are never owners worth collecting for, and there are many of them.
IGNORED_RESOURCES: frozenset[tuple[str, str]] = frozenset({("", "events"), ("events.k8s.io", "events")})
DELETABLE_VERBS = ("delete", "list", "watch")


class RestMappingError(LookupError):
    """No served resource has this kind (yet): retried through the rate limiter, never a hot loop."""

    def __init__(self, api_version: str, kind: str) -> None:
        super().__init__(f"unable to get REST mapping for {kind}.{api_version}")
        self.api_version = api_version
        self.kind = kind


def group_of(api_version: str) -> str | None:
    """The group of an apiVersion ("v1" → "", "apps/v1" → "apps"); None when it cannot be one."""
    group, slash, version = api_version.partition("/")
    if not slash:
        return "" if group else None
    if not group or not version or "/" in version:
        return None
    return group


def gv_of(gvr: GroupVersionResource) -> str:
    """The discovery key of a resource's group version ("v1", "apps/v1"), as in `Discovery.failed`."""
    return gvr.api_version


def deletable_resources(discovery: Discovery) -> set[GroupVersionResource]:
    """Preferred resources supporting delete, list and watch, minus the ignored ones."""
    return {
        r.gvr
        for r in discovery.with_verbs(*DELETABLE_VERBS)
        if (r.gvr.group, r.gvr.resource) not in IGNORED_RESOURCES
    }


class RestMapper:
    """(group, kind) → the resource serving it, from the last discovery. Any version of the group resolves
    to the preferred one: an ownerReference written against another served version names the same object."""

    def __init__(self) -> None:
        self._by_kind: dict[tuple[str, str], GroupVersionResource] = {}

    def update(self, discovery: Discovery) -> None:
        """Take the kinds of `discovery`; the kinds of groups whose discovery failed are kept as they were."""
        failed_groups = {gv.rpartition("/")[0] for gv in discovery.failed}
        kept = {key: gvr for key, gvr in self._by_kind.items() if key[0] in failed_groups}
        fresh: dict[tuple[str, str], GroupVersionResource] = {}
        for resource in discovery.resources:
            gvr = resource.gvr
            if gvr.kind:
                fresh.setdefault((gvr.group, gvr.kind), gvr)
        self._by_kind = {**kept, **fresh}

    def resource_for(self, api_version: str, kind: str) -> GroupVersionResource:
        group = group_of(api_version)
        gvr = self._by_kind.get((group, kind)) if group is not None else None
        if gvr is None:
            raise RestMappingError(api_version, kind)
        return gvr

    def kinds(self) -> Mapping[tuple[str, str], GroupVersionResource]:
        return self._by_kind
