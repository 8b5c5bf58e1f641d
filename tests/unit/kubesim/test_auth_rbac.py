"""The RBAC authorizer over a store: which bindings apply to whom, with upstream's reasons."""

from __future__ import annotations

from typing import Any

import pytest

from kubesim.auth.aggregation import aggregated_rules
from kubesim.auth.attributes import Attributes
from kubesim.auth.bootstrap import seed_rbac
from kubesim.auth.rbac import CLUSTER_ROLE_BINDINGS, CLUSTER_ROLES, ROLE_BINDINGS, ROLES, RbacAuthorizer
from kubesim.auth.service import Auth, forbidden
from kubesim.auth.user import ANONYMOUS_USER, UserInfo, service_account_user
from kubesim.storage.store import Store

RBAC = "rbac.authorization.k8s.io"
READ_PODS = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}]


def role(store: Store, name: str, rules: list[dict[str, Any]], namespace: str = "", **extra: Any) -> None:
    kind, key = ("Role", ROLES) if namespace else ("ClusterRole", CLUSTER_ROLES)
    meta: dict[str, Any] = {"name": name, **({"namespace": namespace} if namespace else {}), **extra}
    store.create(key, {"apiVersion": f"{RBAC}/v1", "kind": kind, "metadata": meta, "rules": rules})


def bind(
    store: Store,
    name: str,
    role_kind: str,
    role_name: str,
    subjects: list[dict[str, str]],
    namespace: str = "",
) -> None:
    kind, key = ("RoleBinding", ROLE_BINDINGS) if namespace else ("ClusterRoleBinding", CLUSTER_ROLE_BINDINGS)
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    ref = {"apiGroup": RBAC, "kind": role_kind, "name": role_name}
    store.create(
        key,
        {"apiVersion": f"{RBAC}/v1", "kind": kind, "metadata": meta, "roleRef": ref, "subjects": subjects},
    )


def get_pods(ns: str = "a", verb: str = "get") -> Attributes:
    return Attributes(verb, True, "", "v1", "pods", "", ns, "p" if verb == "get" else "")


ALICE = UserInfo("alice", groups=("devs", "system:authenticated"))


@pytest.fixture
def store() -> Store:
    return Store()


@pytest.fixture
def rbac(store: Store) -> RbacAuthorizer:
    return RbacAuthorizer(store)


def test_a_cluster_role_binding_grants_everywhere_and_says_so(store: Store, rbac: RbacAuthorizer) -> None:
    assert rbac.authorize(ALICE, get_pods()) == (False, "")
    role(store, "pod-reader", READ_PODS)
    bind(store, "alice-reads", "ClusterRole", "pod-reader", [{"kind": "User", "name": "alice"}])
    assert rbac.authorize(ALICE, get_pods("a")) == (
        True,
        'RBAC: allowed by ClusterRoleBinding "alice-reads" of ClusterRole "pod-reader" to User "alice"',
    )
    assert rbac.authorize(ALICE, get_pods("b", "list"))[0]
    assert not rbac.authorize(ALICE, get_pods("a", "delete"))[0]
    assert not rbac.authorize(UserInfo("bob"), get_pods())[0]


def test_a_role_binding_grants_in_its_namespace_only(store: Store, rbac: RbacAuthorizer) -> None:
    role(store, "pod-reader", READ_PODS, namespace="a")
    bind(store, "devs-read", "Role", "pod-reader", [{"kind": "Group", "name": "devs"}], namespace="a")
    assert rbac.authorize(ALICE, get_pods("a")) == (
        True,
        'RBAC: allowed by RoleBinding "devs-read/a" of Role "pod-reader" to Group "devs"',
    )
    assert not rbac.authorize(ALICE, get_pods("b"))[0]
    assert not rbac.authorize(ALICE, Attributes("list", True, "", "v1", "pods"))[0]  # across namespaces


def test_a_role_binding_may_use_a_cluster_role_in_its_namespace(store: Store, rbac: RbacAuthorizer) -> None:
    role(store, "pod-reader", READ_PODS)
    bind(store, "read", "ClusterRole", "pod-reader", [{"kind": "User", "name": "alice"}], namespace="a")
    assert rbac.authorize(ALICE, get_pods("a"))[0]
    assert not rbac.authorize(ALICE, get_pods("b"))[0]


def test_service_account_subjects_default_to_the_binding_namespace(
    store: Store, rbac: RbacAuthorizer
) -> None:
    role(store, "pod-reader", READ_PODS)
    bind(
        store,
        "sa-local",
        "ClusterRole",
        "pod-reader",
        [{"kind": "ServiceAccount", "name": "bot"}],
        namespace="a",
    )
    assert rbac.authorize(service_account_user("a", "bot"), get_pods("a")) == (
        True,
        'RBAC: allowed by RoleBinding "sa-local/a" of ClusterRole "pod-reader" to ServiceAccount "bot/a"',
    )
    assert not rbac.authorize(service_account_user("b", "bot"), get_pods("a"))[0]
    # a ClusterRoleBinding's service account without a namespace binds nobody
    bind(store, "sa-nowhere", "ClusterRole", "pod-reader", [{"kind": "ServiceAccount", "name": "bot"}])
    assert not rbac.authorize(service_account_user("b", "bot"), get_pods("b"))[0]


@pytest.mark.parametrize(
    ("group", "user", "allowed"),
    [
        ("system:serviceaccounts", service_account_user("x", "y"), True),
        ("system:serviceaccounts:x", service_account_user("x", "y"), True),
        ("system:serviceaccounts:z", service_account_user("x", "y"), False),
        ("system:authenticated", ALICE, True),
        ("system:authenticated", ANONYMOUS_USER, False),
        ("system:unauthenticated", ANONYMOUS_USER, True),
    ],
)
def test_the_implicit_groups(
    store: Store, rbac: RbacAuthorizer, group: str, user: UserInfo, allowed: bool
) -> None:
    role(store, "pod-reader", READ_PODS)
    bind(store, "by-group", "ClusterRole", "pod-reader", [{"kind": "Group", "name": group}])
    assert rbac.authorize(user, get_pods("x"))[0] is allowed


def test_index_follows_binding_and_role_changes(store: Store, rbac: RbacAuthorizer) -> None:
    role(store, "pod-reader", READ_PODS)
    bind(store, "alice-reads", "ClusterRole", "pod-reader", [{"kind": "User", "name": "alice"}])
    assert rbac.authorize(ALICE, get_pods())[0]
    narrowed = store.get(CLUSTER_ROLES, "", "pod-reader")
    assert narrowed is not None
    narrowed["rules"] = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]
    store.update(CLUSTER_ROLES, narrowed)
    assert not rbac.authorize(ALICE, get_pods())[0]
    assert rbac.authorize(ALICE, get_pods(verb="list"))[0]
    store.delete(CLUSTER_ROLE_BINDINGS, "", "alice-reads")
    assert not rbac.authorize(ALICE, get_pods(verb="list"))[0]


def test_a_binding_to_a_missing_role_or_a_cluster_binding_to_a_role_grants_nothing(
    store: Store, rbac: RbacAuthorizer
) -> None:
    bind(store, "dangling", "ClusterRole", "absent", [{"kind": "User", "name": "alice"}])
    role(store, "pod-reader", READ_PODS, namespace="")
    bind(store, "wrong-kind", "Role", "pod-reader", [{"kind": "User", "name": "alice"}])
    assert not rbac.authorize(ALICE, get_pods())[0]


def test_bootstrap_policy(store: Store) -> None:
    seed_rbac(store)
    rbac = RbacAuthorizer(store)
    admin = UserInfo("root", groups=("system:masters", "system:authenticated"))
    store.delete(CLUSTER_ROLE_BINDINGS, "", "cluster-admin")
    assert rbac.authorize(admin, get_pods(verb="delete"))[0]  # system:masters is privileged without RBAC
    bound = UserInfo("ops")
    bind(store, "ops", "ClusterRole", "cluster-admin", [{"kind": "User", "name": "ops"}])
    assert rbac.authorize(bound, Attributes("delete", True, "", "v1", "nodes", "", "", "n"))[0]
    assert rbac.authorize(bound, Attributes("get", False, path="/metrics"))[0]
    for path in ("/healthz", "/livez", "/readyz", "/version"):
        assert rbac.authorize(ANONYMOUS_USER, Attributes("get", False, path=path))[0], path
    assert not rbac.authorize(ANONYMOUS_USER, Attributes("get", False, path="/apis"))[0]
    assert rbac.authorize(ALICE, Attributes("get", False, path="/apis/apps/v1"))[0]
    ssar = Attributes("create", True, "authorization.k8s.io", "v1", "selfsubjectaccessreviews")
    assert rbac.authorize(ALICE, ssar)[0]
    assert not rbac.authorize(ALICE, get_pods())[0]
    seed_rbac(store)  # idempotent: recreates only what is missing
    assert store.entry(CLUSTER_ROLE_BINDINGS, "", "cluster-admin") is not None


def test_cluster_role_aggregation_on_write(store: Store) -> None:
    auth = Auth(store)
    try:
        selector = {"clusterRoleSelectors": [{"matchLabels": {"aggregate-to-monitoring": "true"}}]}
        store.create(CLUSTER_ROLES, {"metadata": {"name": "monitoring"}, "aggregationRule": selector})
        role(store, "b-pods", READ_PODS, labels={"aggregate-to-monitoring": "true"})
        endpoints = [{"apiGroups": [""], "resources": ["endpoints"], "verbs": ["get"]}]
        role(store, "a-endpoints", endpoints, labels={"aggregate-to-monitoring": "true"})
        role(store, "unrelated", [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}])
        stored = store.get(CLUSTER_ROLES, "", "monitoring")
        assert stored is not None and stored["rules"] == endpoints + READ_PODS  # sorted by role name
        store.delete(CLUSTER_ROLES, "", "b-pods")
        stored = store.get(CLUSTER_ROLES, "", "monitoring")
        assert stored is not None and stored["rules"] == endpoints
    finally:
        auth.close()


def test_aggregation_dedups_skips_itself_and_tolerates_bad_selectors() -> None:
    rule = {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}
    me = {
        "metadata": {"name": "me", "labels": {"x": "1"}},
        "aggregationRule": {
            "clusterRoleSelectors": [{"matchLabels": {"x": "1"}}, "junk", {"matchLabels": {"bad key!": "1"}}]
        },
    }
    others = [
        {"metadata": {"name": "one", "labels": {"x": "1"}}, "rules": [rule]},
        {"metadata": {"name": "two", "labels": {"x": "1"}}, "rules": [rule]},
    ]
    assert aggregated_rules(me, [me, *others]) == [rule]
    assert aggregated_rules({"metadata": {"name": "plain"}}, others) is None


@pytest.mark.parametrize(
    ("attrs", "message"),
    [
        (
            get_pods("a"),
            'pods "p" is forbidden: User "bob" cannot get resource "pods" in API group ""'
            ' in the namespace "a"',
        ),
        (
            Attributes("list", True, "apps", "v1", "deployments", "", ""),
            'deployments.apps is forbidden: User "bob" cannot list resource "deployments"'
            ' in API group "apps" at the cluster scope',
        ),
        (
            Attributes("get", True, "", "v1", "pods", "log", "a", "p"),
            'pods "p" is forbidden: User "bob" cannot get resource "pods/log" in API group ""'
            ' in the namespace "a"',
        ),
        (Attributes("get", False, path="/metrics"), 'forbidden: User "bob" cannot get path "/metrics"'),
    ],
)
def test_forbidden_wording(attrs: Attributes, message: str) -> None:
    err = forbidden(UserInfo("bob"), attrs)
    assert (err.code, err.reason, err.message) == (403, "Forbidden", message)
