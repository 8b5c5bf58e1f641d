"""Resource types kubesim serves: names, scope, verbs, subresources and per-type storage strategy."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

JSON = dict[str, Any]

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
SUB_VERBS = ("get", "patch", "update")
NO_DELETECOLLECTION = tuple(v for v in ALL_VERBS if v != "deletecollection")

# generation policies: what each type's registry strategy does to metadata.generation in PrepareForCreate and
# PrepareForUpdate (e.g. `pkg/registry/apps/deployment/strategy.go` `deploymentStrategy.PrepareForUpdate`)
GEN_NONE = "none"  # no metadata.generation
GEN_CREATE = "create"  # 1 on create, never bumped by writes (pods in 1.32)
GEN_SPEC = "spec"  # 1 on create, +1 when anything but metadata/status changes
GEN_SPEC_ANNOTATIONS = "spec+annotations"  # deployments: annotation changes bump too


@dataclass(frozen=True)
class ScaleSpec:
    """Where the scale subresource reads and writes, as dotted paths into the parent object."""

    spec_replicas: str = "spec.replicas"
    status_replicas: str = "status.replicas"
    label_selector: str | None = "spec.selector"  # a selector string, or a LabelSelector object


@dataclass(frozen=True)
class ResourceType:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True
    singular: str = ""
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    status: bool = False
    scale: ScaleSpec | None = None
    generation: str = GEN_NONE
    name_rule: str = "subdomain"  # "subdomain" | "label" (namespaces, services)
    store_group: str | None = None  # storage shared with another group (events.k8s.io -> core)
    field_selectors: tuple[tuple[str, str], ...] = ()  # (selector field, dotted path in the stored object)
    return_deleted: bool = False  # DELETE answers with the object rather than a Status
    printer: str = ""  # table printer name, "" = Name + Created At
    crd: JSON | None = field(default=None, compare=False, hash=False)  # the CRD object for custom resources
    review: bool = False  # create-only and never stored (access/identity reviews answered at once)

    # computed once per type (a frozen dataclass keeps them in its __dict__, out of eq and hash): each
    # request asks for them several times
    @functools.cached_property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @functools.cached_property
    def key(self) -> str:
        """The store key: plural qualified by the storage group."""
        group = self.group if self.store_group is None else self.store_group
        return f"{self.plural}.{group}" if group else self.plural

    @property
    def list_kind(self) -> str:
        return self.kind + "List"

    @property
    def singular_name(self) -> str:
        return self.singular or self.kind.lower()

    def field_paths(self) -> dict[str, str]:
        paths = {"metadata.name": "metadata.name"}
        if self.namespaced:
            paths["metadata.namespace"] = "metadata.namespace"
        paths.update(self.field_selectors)
        return paths


def _t(group: str, plural: str, kind: str, **kw: Any) -> ResourceType:
    return ResourceType(group=group, version="v1", plural=plural, kind=kind, **kw)


def _workload(group: str, plural: str, kind: str, **kw: Any) -> ResourceType:
    """A type in category "all" (`kubectl get all`), with a status subresource and a table printer."""
    return _t(group, plural, kind, categories=("all",), status=True, printer=plural, **kw)


def _review(group: str, plural: str, kind: str, namespaced: bool = False) -> ResourceType:
    """An access or identity review: create-only and never stored (kubesim.handlers.reviews answers it)."""
    return _t(group, plural, kind, namespaced=namespaced, verbs=("create",), review=True)


_POD_FIELDS = tuple(
    (f, f)
    for f in (
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.nominatedNodeName",
    )
)
_OBJECT_REF = ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
_CORE_EVENT_FIELDS = (
    *((f"involvedObject.{f}", f"involvedObject.{f}") for f in _OBJECT_REF),
    ("reason", "reason"),
    ("reportingComponent", "reportingComponent"),
    ("source", "source.component"),
    ("type", "type"),
)
_NEW_EVENT_FIELDS = (
    *((f"regarding.{f}", f"involvedObject.{f}") for f in _OBJECT_REF),
    ("reason", "reason"),
    ("reportingController", "reportingComponent"),
    ("type", "type"),
)

BUILTIN_TYPES: tuple[ResourceType, ...] = (
    _t(
        "",
        "namespaces",
        "Namespace",
        namespaced=False,
        short_names=("ns",),
        status=True,
        name_rule="label",
        field_selectors=(("status.phase", "status.phase"),),
        printer="namespaces",
    ),
    _workload(
        "",
        "pods",
        "Pod",
        short_names=("po",),
        generation=GEN_CREATE,
        field_selectors=_POD_FIELDS,
        return_deleted=True,
    ),
    _t(
        "",
        "nodes",
        "Node",
        namespaced=False,
        short_names=("no",),
        status=True,
        field_selectors=(("spec.unschedulable", "spec.unschedulable"),),
        printer="nodes",
    ),
    _t("", "events", "Event", short_names=("ev",), field_selectors=_CORE_EVENT_FIELDS, printer="events"),
    _t(
        "events.k8s.io",
        "events",
        "Event",
        short_names=("ev",),
        store_group="",
        field_selectors=_NEW_EVENT_FIELDS,
        printer="events",
    ),
    _t("", "configmaps", "ConfigMap", short_names=("cm",), printer="configmaps"),
    _t("", "secrets", "Secret", field_selectors=(("type", "type"),), printer="secrets"),
    _workload(
        "",
        "services",
        "Service",
        short_names=("svc",),
        name_rule="label",
        return_deleted=True,
        verbs=NO_DELETECOLLECTION,  # upstream's services storage has no DeleteCollection
    ),
    _t("", "serviceaccounts", "ServiceAccount", short_names=("sa",), return_deleted=True),
    _t("coordination.k8s.io", "leases", "Lease", printer="leases"),
    _workload(
        "batch",
        "jobs",
        "Job",
        generation=GEN_SPEC,
        field_selectors=(("status.successful", "status.succeeded"),),
    ),
    _workload("batch", "cronjobs", "CronJob", short_names=("cj",), generation=GEN_SPEC),
    _workload(
        "apps",
        "replicasets",
        "ReplicaSet",
        short_names=("rs",),
        scale=ScaleSpec(),
        generation=GEN_SPEC,
        field_selectors=(("status.replicas", "status.replicas"),),
    ),
    _workload(
        "apps",
        "deployments",
        "Deployment",
        short_names=("deploy",),
        scale=ScaleSpec(),
        generation=GEN_SPEC_ANNOTATIONS,
    ),
    _t(
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        namespaced=False,
        short_names=("crd", "crds"),
        categories=("api-extensions",),
        status=True,
        generation=GEN_SPEC,
    ),
    _t("rbac.authorization.k8s.io", "roles", "Role"),
    _t("rbac.authorization.k8s.io", "rolebindings", "RoleBinding"),
    _t("rbac.authorization.k8s.io", "clusterroles", "ClusterRole", namespaced=False),
    _t("rbac.authorization.k8s.io", "clusterrolebindings", "ClusterRoleBinding", namespaced=False),
    _review("authorization.k8s.io", "selfsubjectaccessreviews", "SelfSubjectAccessReview"),
    _review("authorization.k8s.io", "subjectaccessreviews", "SubjectAccessReview"),
    _review("authorization.k8s.io", "selfsubjectrulesreviews", "SelfSubjectRulesReview"),
    _review("authorization.k8s.io", "localsubjectaccessreviews", "LocalSubjectAccessReview", namespaced=True),
    _review("authentication.k8s.io", "selfsubjectreviews", "SelfSubjectReview"),
    _review("authentication.k8s.io", "tokenreviews", "TokenReview"),
)

# GroupVersions served, in the order discovery lists them (preferred first within a group).
GROUP_ORDER = (
    "",
    "apps",
    "events.k8s.io",
    "batch",
    "coordination.k8s.io",
    "rbac.authorization.k8s.io",
    "apiextensions.k8s.io",
    "authentication.k8s.io",
    "authorization.k8s.io",
)

SEED_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
