"""The bootstrap RBAC policy a new cluster starts with (upstream
`plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go`), the part kubesim's clients rely on:
cluster-admin for system:masters, discovery and health for everyone, self reviews for the authenticated."""

from __future__ import annotations

import copy
from typing import Any

from kubesim.auth.rbac import CLUSTER_ROLE_BINDINGS, CLUSTER_ROLES, RBAC
from kubesim.auth.user import AUTHENTICATED, MASTERS, UNAUTHENTICATED
from kubesim.storage.store import Store

JSON = dict[str, Any]
_PUBLIC_URLS = ["/healthz", "/livez", "/readyz", "/version", "/version/"]
_DISCOVERY_URLS = ["/api", "/api/*", "/apis", "/apis/*", "/openapi", "/openapi/*", *_PUBLIC_URLS]

CLUSTER_ROLE_RULES: dict[str, list[JSON]] = {
    "cluster-admin": [
        {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
        {"nonResourceURLs": ["*"], "verbs": ["*"]},
    ],
    "system:discovery": [{"nonResourceURLs": _DISCOVERY_URLS, "verbs": ["get"]}],
    "system:public-info-viewer": [{"nonResourceURLs": _PUBLIC_URLS, "verbs": ["get"]}],
    "system:basic-user": [
        {
            "apiGroups": ["authorization.k8s.io"],
            "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
            "verbs": ["create"],
        },
        {"apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"], "verbs": ["create"]},
    ],
    # bound by whoever delegates authentication and authorization to the API server (not bound here)
    "system:auth-delegator": [
        {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
        {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"], "verbs": ["create"]},
    ],
}
CLUSTER_ROLE_BINDING_GROUPS: dict[str, list[str]] = {
    "cluster-admin": [MASTERS],
    "system:discovery": [AUTHENTICATED],
    "system:public-info-viewer": [AUTHENTICATED, UNAUTHENTICATED],
    "system:basic-user": [AUTHENTICATED],
}


def _meta(name: str) -> JSON:
    return {
        "name": name,
        "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
        "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
    }


def seed_rbac(store: Store) -> None:
    """Create the bootstrap roles and bindings that are missing (a kept data directory may have them)."""
    for name, rules in CLUSTER_ROLE_RULES.items():
        if store.entry(CLUSTER_ROLES, "", name) is None:
            role = {
                "apiVersion": f"{RBAC}/v1",
                "kind": "ClusterRole",
                "metadata": _meta(name),
                "rules": copy.deepcopy(rules),
            }
            store.create(CLUSTER_ROLES, role)
    for name, groups in CLUSTER_ROLE_BINDING_GROUPS.items():
        if store.entry(CLUSTER_ROLE_BINDINGS, "", name) is None:
            binding = {
                "apiVersion": f"{RBAC}/v1",
                "kind": "ClusterRoleBinding",
                "metadata": _meta(name),
                "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": name},
                "subjects": [{"apiGroup": RBAC, "kind": "Group", "name": group} for group in groups],
            }
            store.create(CLUSTER_ROLE_BINDINGS, binding)
