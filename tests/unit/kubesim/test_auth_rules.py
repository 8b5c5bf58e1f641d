"""RBAC rule matching: verbs, API groups, resources and subresources, names, non-resource URLs."""

from __future__ import annotations

from typing import Any

import pytest

from kubesim.auth.attributes import Attributes
from kubesim.auth.rules import rule_allows


def res(
    verb: str, resource: str, group: str = "", sub: str = "", name: str = "", ns: str = "a"
) -> Attributes:
    return Attributes(verb, True, group, "v1", resource, sub, ns, name)


def url(verb: str, path: str) -> Attributes:
    return Attributes(verb, resource_request=False, path=path)


PODS_GET = {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}


@pytest.mark.parametrize(
    ("rule", "attrs", "allowed"),
    [
        (PODS_GET, res("get", "pods"), True),
        (PODS_GET, res("list", "pods"), True),
        (PODS_GET, res("delete", "pods"), False),
        (PODS_GET, res("get", "pods", group="apps"), False),
        (PODS_GET, res("get", "services"), False),
        # a resource does not grant its subresources, nor the other way round
        (PODS_GET, res("get", "pods", sub="log"), False),
        (
            {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
            res("get", "pods", sub="log"),
            True,
        ),
        ({"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]}, res("get", "pods"), False),
        (
            {"apiGroups": ["*"], "resources": ["*/scale"], "verbs": ["*"]},
            res("update", "deployments", "apps", "scale"),
            True,
        ),
        (
            {"apiGroups": ["*"], "resources": ["*/scale"], "verbs": ["*"]},
            res("update", "deployments", "apps"),
            False,
        ),
        # `*` is every verb, group, resource and subresource
        (
            {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
            res("impersonate", "users", sub="x"),
            True,
        ),
        (
            {"apiGroups": ["apps"], "resources": ["*"], "verbs": ["get"]},
            res("get", "deployments", "apps"),
            True,
        ),
        ({"apiGroups": ["apps"], "resources": ["*"], "verbs": ["get"]}, res("get", "pods"), False),
        # resourceNames narrow to those names; a request without a name (list, create) is not one of them
        (
            {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["x"], "verbs": ["get"]},
            res("get", "configmaps", name="x"),
            True,
        ),
        (
            {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["x"], "verbs": ["get"]},
            res("get", "configmaps", name="y"),
            False,
        ),
        (
            {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["x"], "verbs": ["list"]},
            res("list", "configmaps"),
            False,
        ),
        # resource rules never match paths, URL rules never match resources
        ({"nonResourceURLs": ["/healthz"], "verbs": ["get"]}, url("get", "/healthz"), True),
        ({"nonResourceURLs": ["/healthz"], "verbs": ["get"]}, url("post", "/healthz"), False),
        ({"nonResourceURLs": ["/healthz"], "verbs": ["get"]}, url("get", "/healthz/etcd"), False),
        ({"nonResourceURLs": ["/healthz/*"], "verbs": ["get"]}, url("get", "/healthz/etcd"), True),
        ({"nonResourceURLs": ["/apis*"], "verbs": ["get"]}, url("get", "/apis/apps/v1"), True),
        ({"nonResourceURLs": ["*"], "verbs": ["*"]}, url("delete", "/anything"), True),
        ({"nonResourceURLs": ["*"], "verbs": ["*"]}, res("get", "pods"), False),
        ({"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}, url("get", "/healthz"), False),
        # malformed rules match nothing rather than crash
        ({"apiGroups": "*", "resources": ["*"], "verbs": ["*"]}, res("get", "pods"), False),
        ({"verbs": [1, None]}, res("get", "pods"), False),
    ],
)
def test_rule_allows(rule: dict[str, Any], attrs: Attributes, allowed: bool) -> None:
    assert rule_allows(rule, attrs) is allowed
