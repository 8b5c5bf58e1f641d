"""The RBAC authorizer (upstream `plugin/pkg/auth/authorizer/rbac/rbac.go`): the rules a user holds come from
the ClusterRoleBindings and (in the request's namespace) RoleBindings whose subjects name the user, one of its
groups, or its service account. Bindings are indexed by subject, rebuilt after any write to a binding, so a
check reads only the bindings of that user and its groups, never all of them; and a decision is remembered
until the next write of any RBAC object."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kubesim.auth.attributes import Attributes
from kubesim.auth.rules import rule_allows
from kubesim.auth.user import MASTERS, UserInfo, service_account_username
from kubesim.storage.store import Store, WatchEvent

JSON = dict[str, Any]
RBAC = "rbac.authorization.k8s.io"
ROLES = f"roles.{RBAC}"
CLUSTER_ROLES = f"clusterroles.{RBAC}"
ROLE_BINDINGS = f"rolebindings.{RBAC}"
CLUSTER_ROLE_BINDINGS = f"clusterrolebindings.{RBAC}"
DECISIONS_KEPT = 4096  # clients repeat the same few requests: their decisions are kept until RBAC changes


@dataclass(frozen=True)
class Grant:
    """One binding's role, granted to one subject: where its rules come from, how a reason names it."""

    binding_kind: str
    binding: str  # "name" or "name/namespace", as upstream's reasons print it
    role_kind: str
    role: str
    role_namespace: str  # "" for a ClusterRole
    subject: str  # `Kind "name"`

    def describe(self) -> str:
        return f'{self.binding_kind} "{self.binding}" of {self.role_kind} "{self.role}" to {self.subject}'


@dataclass
class _Subjects:
    """Grants keyed by user name (service accounts by their user name) and by group name."""

    users: dict[str, list[Grant]]
    groups: dict[str, list[Grant]]

    def grants(self, user: UserInfo) -> Iterator[Grant]:
        yield from self.users.get(user.name, ())
        for group in user.groups:
            yield from self.groups.get(group, ())


def _index_binding(index: _Subjects, obj: JSON, cluster: bool) -> None:
    meta = obj.get("metadata") or {}
    name, namespace = str(meta.get("name", "")), str(meta.get("namespace", ""))
    ref = obj.get("roleRef") or {}
    role_kind, role = str(ref.get("kind", "")), str(ref.get("name", ""))
    if role_kind not in ("ClusterRole", "Role") or (cluster and role_kind == "Role"):
        return  # a ClusterRoleBinding can only reference a ClusterRole
    binding_kind = "ClusterRoleBinding" if cluster else "RoleBinding"
    shown = name if cluster else f"{name}/{namespace}"
    role_namespace = "" if role_kind == "ClusterRole" else namespace
    for subject in obj.get("subjects") or []:
        if not isinstance(subject, dict):
            continue
        kind, subject_name = subject.get("kind"), str(subject.get("name", ""))
        if kind == "ServiceAccount":
            # a RoleBinding's service account defaults to the binding's namespace; a cluster one needs its own
            sa_namespace = str(subject.get("namespace") or ("" if cluster else namespace))
            if not sa_namespace:
                continue
            described = f'ServiceAccount "{subject_name}/{sa_namespace}"'
            grant = Grant(binding_kind, shown, role_kind, role, role_namespace, described)
            index.users.setdefault(service_account_username(sa_namespace, subject_name), []).append(grant)
        elif kind in ("User", "Group"):
            grant = Grant(binding_kind, shown, role_kind, role, role_namespace, f'{kind} "{subject_name}"')
            keyed = index.users if kind == "User" else index.groups
            keyed.setdefault(subject_name, []).append(grant)


class RbacAuthorizer:
    """Allows what some bound rule allows; system:masters is allowed everything, as kube-apiserver's
    privileged-group authorizer ahead of RBAC does."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._cluster: _Subjects | None = None
        self._namespaced: dict[str, _Subjects] = {}
        self._decisions: dict[tuple[UserInfo, Attributes], tuple[bool, str]] = {}
        self._subscriptions = [
            store.subscribe(ROLE_BINDINGS, self._binding_changed),
            store.subscribe(CLUSTER_ROLE_BINDINGS, self._binding_changed),
            store.subscribe(ROLES, self._role_changed),
            store.subscribe(CLUSTER_ROLES, self._role_changed),
        ]

    def close(self) -> None:
        for sub in self._subscriptions:
            sub.close()

    def _binding_changed(self, event: WatchEvent) -> None:
        self._cluster = None  # rebuilt by the next check
        self._decisions.clear()

    def _role_changed(self, event: WatchEvent) -> None:
        self._decisions.clear()

    def _indexes(self) -> tuple[_Subjects, dict[str, _Subjects]]:
        if self._cluster is None:
            cluster = _Subjects({}, {})
            for entry in self.store.entries(CLUSTER_ROLE_BINDINGS):
                _index_binding(cluster, entry.obj, cluster=True)
            namespaced: dict[str, _Subjects] = {}
            for entry in self.store.entries(ROLE_BINDINGS):
                namespace = str(entry.obj.get("metadata", {}).get("namespace", ""))
                _index_binding(namespaced.setdefault(namespace, _Subjects({}, {})), entry.obj, cluster=False)
            self._cluster, self._namespaced = cluster, namespaced
        return self._cluster, self._namespaced

    def grants(self, user: UserInfo, namespace: str) -> Iterator[Grant]:
        """The grants that apply to `user` for a request in `namespace` ("" = cluster scope only)."""
        cluster, namespaced = self._indexes()
        yield from cluster.grants(user)
        if namespace and namespace in namespaced:
            yield from namespaced[namespace].grants(user)

    def role_rules(self, grant: Grant) -> list[JSON]:
        resource = CLUSTER_ROLES if grant.role_namespace == "" else ROLES
        entry = self.store.entry(resource, grant.role_namespace, grant.role)
        rules = entry.obj.get("rules") if entry is not None else None
        return [r for r in rules if isinstance(r, dict)] if isinstance(rules, list) else []

    def rules_for(self, user: UserInfo, namespace: str) -> list[JSON]:
        """Every rule `user` holds in `namespace` (SelfSubjectRulesReview)."""
        return [rule for grant in self.grants(user, namespace) for rule in self.role_rules(grant)]

    def authorize(self, user: UserInfo, attrs: Attributes) -> tuple[bool, str]:
        """(allowed, reason): the reason names the binding that allowed it, as upstream's does."""
        if MASTERS in user.groups:
            return True, ""
        key = (user, attrs)
        decision = self._decisions.get(key)
        if decision is None:
            if len(self._decisions) >= DECISIONS_KEPT:
                self._decisions.clear()
            decision = self._decisions[key] = self._decide(user, attrs)
        return decision

    def _decide(self, user: UserInfo, attrs: Attributes) -> tuple[bool, str]:
        namespace = attrs.namespace if attrs.resource_request else ""
        for grant in self.grants(user, namespace):
            for rule in self.role_rules(grant):
                if rule_allows(rule, attrs):
                    return True, f"RBAC: allowed by {grant.describe()}"
        return False, ""
