"""Request attributes from method and URL, as upstream's RequestInfoFactory reads them."""

from __future__ import annotations

import pytest

from kubesim.auth.attributes import Attributes, request_attributes

R = Attributes


@pytest.mark.parametrize(
    ("method", "path", "query", "expected"),
    [
        ("GET", "/api/v1/namespaces/default/pods", {}, R("list", True, "", "v1", "pods", "", "default")),
        ("GET", "/api/v1/pods", {"watch": "true"}, R("watch", True, "", "v1", "pods")),
        ("GET", "/api/v1/pods", {"watch": "false"}, R("list", True, "", "v1", "pods")),
        ("GET", "/api/v1/watch/namespaces/a/pods", {}, R("watch", True, "", "v1", "pods", "", "a")),
        ("GET", "/api/v1/namespaces/a/pods/p", {}, R("get", True, "", "v1", "pods", "", "a", "p")),
        ("HEAD", "/api/v1/namespaces/a/pods/p", {}, R("get", True, "", "v1", "pods", "", "a", "p")),
        ("GET", "/api/v1/namespaces/a/pods/p/log", {}, R("get", True, "", "v1", "pods", "log", "a", "p")),
        ("POST", "/api/v1/namespaces/a/pods", {}, R("create", True, "", "v1", "pods", "", "a")),
        (
            "PUT",
            "/apis/apps/v1/namespaces/a/deployments/d/scale",
            {},
            R("update", True, "apps", "v1", "deployments", "scale", "a", "d"),
        ),
        (
            "PATCH",
            "/apis/apps/v1/namespaces/a/deployments/d",
            {},
            R("patch", True, "apps", "v1", "deployments", "", "a", "d"),
        ),
        ("DELETE", "/api/v1/namespaces/a/pods/p", {}, R("delete", True, "", "v1", "pods", "", "a", "p")),
        ("DELETE", "/api/v1/namespaces/a/pods", {}, R("deletecollection", True, "", "v1", "pods", "", "a")),
        ("GET", "/api/v1/nodes/n1", {}, R("get", True, "", "v1", "nodes", "", "", "n1")),
        # a namespace is a resource in its own namespace; status and finalize are its subresources
        ("GET", "/api/v1/namespaces", {}, R("list", True, "", "v1", "namespaces")),
        ("GET", "/api/v1/namespaces/a", {}, R("get", True, "", "v1", "namespaces", "", "a", "a")),
        (
            "PUT",
            "/api/v1/namespaces/a/finalize",
            {},
            R("update", True, "", "v1", "namespaces", "finalize", "a", "a"),
        ),
        # a list narrowed to one name by a field selector is checked against that name
        (
            "GET",
            "/api/v1/namespaces/a/pods",
            {"fieldSelector": "metadata.name=p"},
            R("list", True, "", "v1", "pods", "", "a", "p"),
        ),
        (
            "GET",
            "/api/v1/namespaces/a/pods",
            {"fieldSelector": "metadata.name!=p"},
            R("list", True, "", "v1", "pods", "", "a"),
        ),
        (
            "GET",
            "/apis/rbac.authorization.k8s.io/v1/clusterroles",
            {},
            R("list", True, "rbac.authorization.k8s.io", "v1", "clusterroles"),
        ),
    ],
)
def test_resource_requests(method: str, path: str, query: dict[str, str], expected: Attributes) -> None:
    got = request_attributes(method, path, query)
    assert got == Attributes(**{**expected.__dict__, "path": path})


@pytest.mark.parametrize(
    ("method", "path", "verb"),
    [
        ("GET", "/healthz", "get"),
        ("GET", "/version/", "get"),
        ("GET", "/api", "get"),
        ("GET", "/api/v1", "get"),
        ("GET", "/apis/apps", "get"),
        ("GET", "/apis/apps/v1", "get"),
        ("POST", "/kubesim/faults", "post"),
        ("GET", "/openapi/v3/apis/apps/v1", "get"),
    ],
)
def test_non_resource_requests(method: str, path: str, verb: str) -> None:
    assert request_attributes(method, path, {}) == Attributes(verb, resource_request=False, path=path)
