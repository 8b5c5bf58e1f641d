"""kube-controller-manager's bootstrap ClusterRoles for the controllers aiokcm also has, as test data.

Transcribed from kubernetes/kubernetes plugin/pkg/auth/authorizer/rbac/bootstrappolicy/controller_policy.go
(`buildControllerRoles`: the `system:controller:<name>` roles), keyed by the aiokcm controller that does the
same job. Each rule is (API groups, resources, verbs); `eventsRule()` is spelled out."""

from __future__ import annotations

Rule = tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]

EVENTS: Rule = (("", "events.k8s.io"), ("events",), ("create", "update", "patch"))

UPSTREAM_ROLES: dict[str, tuple[Rule, ...]] = {
    # system:controller:job-controller
    "job-controller": (
        (("batch",), ("jobs",), ("get", "list", "watch", "update", "patch")),
        (("batch",), ("jobs/status",), ("update",)),
        (("batch",), ("jobs/finalizers",), ("update",)),
        (("",), ("pods",), ("list", "watch", "create", "delete", "patch")),
        EVENTS,
    ),
    # system:controller:replicaset-controller
    "replicaset-controller": (
        (("apps", "extensions"), ("replicasets",), ("get", "list", "watch", "update")),
        (("apps", "extensions"), ("replicasets/status",), ("update",)),
        (("apps", "extensions"), ("replicasets/finalizers",), ("update",)),
        (("",), ("pods",), ("list", "watch", "patch", "create", "delete")),
        EVENTS,
    ),
    # system:controller:deployment-controller
    "deployment-controller": (
        (("extensions", "apps"), ("deployments",), ("get", "list", "watch", "update")),
        (("extensions", "apps"), ("deployments/status",), ("update",)),
        (("extensions", "apps"), ("deployments/finalizers",), ("update",)),
        (
            ("apps", "extensions"),
            ("replicasets",),
            ("get", "list", "watch", "create", "update", "patch", "delete"),
        ),
        (("",), ("pods",), ("get", "list", "watch", "update")),
        EVENTS,
    ),
    # system:controller:cronjob-controller
    "cronjob-controller": (
        (("batch",), ("cronjobs",), ("get", "list", "watch", "update")),
        (("batch",), ("jobs",), ("get", "list", "watch", "create", "update", "delete", "patch")),
        (("batch",), ("cronjobs/status",), ("update",)),
        (("batch",), ("cronjobs/finalizers",), ("update",)),
        (("",), ("pods",), ("list", "watch", "delete")),
        EVENTS,
    ),
    # system:controller:generic-garbage-collector
    "garbage-collector-controller": (
        (("*",), ("*",), ("get", "list", "watch", "patch", "update", "delete")),
        EVENTS,
    ),
    # system:controller:namespace-controller
    "namespace-controller": (
        (("",), ("namespaces",), ("get", "list", "watch", "delete")),
        (("",), ("namespaces/finalize", "namespaces/status"), ("update",)),
        (("*",), ("*",), ("get", "list", "watch", "delete", "deletecollection")),
    ),
    # system:controller:ttl-after-finished-controller
    "ttl-after-finished-controller": (
        (("batch",), ("jobs",), ("get", "list", "watch", "delete")),
        EVENTS,
    ),
}


def grants(rules: tuple[Rule, ...], group: str, resource: str, verb: str) -> bool:
    """Whether any of `rules` allows `verb` on `group`/`resource` (with RBAC's `*` wildcards)."""
    return any(
        (group in groups or "*" in groups)
        and (resource in resources or "*" in resources)
        and (verb in verbs or "*" in verbs)
        for groups, resources, verbs in rules
    )
