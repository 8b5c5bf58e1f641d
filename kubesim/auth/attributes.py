"""Authorization attributes of a request, read from its method and URL as upstream's RequestInfoFactory does
(`staging/src/k8s.io/apiserver/pkg/endpoints/request/requestinfo.go`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kubesim.auth.user import UserInfo

_METHOD_VERBS = {
    "POST": "create",
    "GET": "get",
    "HEAD": "get",
    "PUT": "update",
    "PATCH": "patch",
    "DELETE": "delete",
}
_SPECIAL_VERBS = ("proxy", "watch")
_NAMESPACE_SUBRESOURCES = ("status", "finalize")
_TRUE = ("1", "t", "T", "TRUE", "true", "True")


@dataclass(frozen=True)
class Attributes:
    """What is asked: a verb on a resource (group, resource, subresource, namespace, name) or on a path."""

    verb: str
    resource_request: bool = True
    group: str = ""
    version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""


@dataclass(frozen=True)
class Request:
    user: UserInfo
    attrs: Attributes


def _non_resource(method: str, path: str) -> Attributes:
    return Attributes(verb=method.lower(), resource_request=False, path=path)


def request_attributes(method: str, path: str, query: Mapping[str, str]) -> Attributes:
    """The attributes of `method path?query`: a resource request under /api or /apis, else a path."""
    parts = [p for p in path.strip("/").split("/") if p]
    if len(parts) < 3 or parts[0] not in ("api", "apis"):
        return _non_resource(method, path)
    group = ""
    rest = parts[1:]
    if parts[0] == "apis":
        if len(rest) < 3:
            return _non_resource(method, path)
        group, rest = rest[0], rest[1:]
    version, rest = rest[0], rest[1:]
    if rest[0] in _SPECIAL_VERBS:
        if len(rest) < 2:
            return _non_resource(method, path)
        verb, rest = rest[0], rest[1:]
    else:
        verb = _METHOD_VERBS.get(method, "")
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 and verb != "proxy" else ""
    if not name and verb == "get":
        verb = "watch" if query.get("watch", "") in _TRUE else "list"
        name = _exact_name(query.get("fieldSelector", ""))
    if not name and verb == "delete":
        verb = "deletecollection"
    return Attributes(verb, True, group, version, resource, subresource, namespace, name, path)


def _exact_name(field_selector: str) -> str:
    """`metadata.name=x` (or `==`) in a field selector narrows a list or watch to one name."""
    for term in field_selector.split(","):
        for op in ("==", "="):
            key, sep, value = term.partition(op)
            if sep and key.strip() == "metadata.name" and "!" not in key:
                value = value.strip()
                return value if value and "/" not in value and value not in (".", "..") else ""
    return ""
