"""Group/version/resource addressing and the built-in resources the manager uses.

Every request the client makes is addressed by a `GroupVersionResource`; nothing on the hot path knows about
typed models. Custom resources are found through discovery (`manager.client.discovery.resolve`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic
from urllib.parse import quote

from typing_extensions import TypeVar

Obj = dict[str, Any]
_UNRESERVED = re.compile(r"[A-Za-z0-9._~-]*").fullmatch
# The type a reader sees the objects of a resource as (listers, `Controller.lister`): the built-in resources
# below say plain dicts, a custom resource may say its TypedDict (`GroupVersionResource[Pipeline]`). A bare
# `GroupVersionResource` is any resource: covariance makes every parameter fit it.
ObjT_co = TypeVar("ObjT_co", bound=Mapping[str, Any], default=Mapping[str, Any], covariant=True)
ObjT = TypeVar("ObjT", bound=Mapping[str, Any], default=Obj)


@dataclass(frozen=True, slots=True)
class GroupVersionResource(Generic[ObjT_co]):
    """One REST resource: `group` ("" = core), `version`, plural `resource`, `kind`, `namespaced`.

    Its type parameter is the type its objects are read as; it changes nothing at run time: two resources
    with the same fields are equal whatever their parameter."""

    group: str
    version: str
    resource: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        """The `apiVersion` field of objects of this resource ("v1", "batch/v1")."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_version_path(self) -> str:
        """ "/api/v1" for the core group, "/apis/<group>/<version>" otherwise."""
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    def api_path(
        self, namespace: str | None = None, name: str | None = None, subresource: str | None = None
    ) -> str:
        """The URL path of the collection (name=None) or of one object, optionally of its subresource.

        A namespaced resource with namespace=None addresses all namespaces (list/watch only).
        """
        # Built for every request: f-strings, and quote() only for a segment that needs it.
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            path = f"{base}/namespaces/{_segment(namespace)}/{self.resource}"
        else:
            path = f"{base}/{self.resource}"
        if name is not None:
            path = f"{path}/{_segment(name)}"
            return f"{path}/{subresource}" if subresource else path
        if subresource:
            raise ValueError("a subresource needs an object name")
        return path

    def __str__(self) -> str:
        return (
            f"{self.resource}.{self.version}.{self.group}"
            if self.group
            else f"{self.resource}.{self.version}"
        )


def _segment(value: str) -> str:
    """`value` as one path segment: percent-encoded as quote(value, safe="") would, which leaves these
    characters alone (names and namespaces are made of them)."""
    return value if _UNRESERVED(value) else quote(value, safe="")


PODS: GroupVersionResource[Obj] = GroupVersionResource("", "v1", "pods", "Pod")
EVENTS: GroupVersionResource[Obj] = GroupVersionResource("", "v1", "events", "Event")
NAMESPACES: GroupVersionResource[Obj] = GroupVersionResource(
    "", "v1", "namespaces", "Namespace", namespaced=False
)
NODES: GroupVersionResource[Obj] = GroupVersionResource("", "v1", "nodes", "Node", namespaced=False)
CONFIGMAPS: GroupVersionResource[Obj] = GroupVersionResource("", "v1", "configmaps", "ConfigMap")
JOBS: GroupVersionResource[Obj] = GroupVersionResource("batch", "v1", "jobs", "Job")
CRONJOBS: GroupVersionResource[Obj] = GroupVersionResource("batch", "v1", "cronjobs", "CronJob")
REPLICASETS: GroupVersionResource[Obj] = GroupVersionResource("apps", "v1", "replicasets", "ReplicaSet")
DEPLOYMENTS: GroupVersionResource[Obj] = GroupVersionResource("apps", "v1", "deployments", "Deployment")
LEASES: GroupVersionResource[Obj] = GroupVersionResource("coordination.k8s.io", "v1", "leases", "Lease")
CUSTOMRESOURCEDEFINITIONS: GroupVersionResource[Obj] = GroupVersionResource(
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", namespaced=False
)

BUILTIN: tuple[GroupVersionResource, ...] = (
    PODS,
    EVENTS,
    NAMESPACES,
    NODES,
    CONFIGMAPS,
    JOBS,
    CRONJOBS,
    REPLICASETS,
    DEPLOYMENTS,
    LEASES,
    CUSTOMRESOURCEDEFINITIONS,
)
