"""What a fault rule matches and does: a request classified as the apiserver's RequestInfo (audit verb,
resource, subresource), error and latency rules with their verb/resource selectors, and the Status body a
real API server answers for each injected error code."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

import orjson
from aiohttp import web

from kubesim.status.body import status_body

AUDIT_VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")
ERROR_CODES = (500, 429, 409)
_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_NAMESPACE_SUBRESOURCES = ("status", "finalize")


@dataclass(frozen=True)
class RequestInfo:
    """Which audit verb and resource an API request is (the apiserver's RequestInfo, reduced)."""

    verb: str
    group: str
    resource: str
    subresource: str = ""
    namespace: str = ""
    name: str = ""


def request_info(method: str, path: str, query: Mapping[str, str]) -> RequestInfo | None:
    """Classify a resource request; None for non-resource paths (/version, /openapi, discovery)."""
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 2 and parts[0] == "api":
        group, rest = "", parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, rest = parts[1], parts[3:]
    else:
        return None
    legacy_watch = bool(rest) and rest[0] == "watch"
    if legacy_watch:
        rest = rest[1:]
    namespace = ""
    if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] not in _NAMESPACE_SUBRESOURCES:
        namespace, rest = rest[1], rest[2:]
    if not rest:
        return None
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    subresource = "/".join(rest[2:])
    if resource == "namespaces" and name:
        namespace = name
    watching = legacy_watch or query.get("watch", "") in _TRUE
    verb = {
        "POST": "create",
        "PUT": "update",
        "PATCH": "patch",
        "DELETE": "delete" if name else "deletecollection",
    }.get(method.upper())
    if verb is None:
        verb = "watch" if watching else ("get" if name else "list")
    return RequestInfo(verb, group, resource, subresource, namespace, name)


def selector(value: object, allowed: Iterable[str] | None, what: str) -> tuple[str, ...]:
    """Normalise a verb/resource selector: None, "*", a string or a list of strings; () means any."""
    if value is None or value == "*":
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not all(isinstance(i, str) and i for i in items):
        raise ValueError(f"{what} must be a string or a list of strings")
    if "*" in items:
        return ()
    if allowed is not None:
        unknown = [i for i in items if i not in allowed]
        if unknown:
            raise ValueError(f"unknown {what} {unknown[0]!r}: expected one of {', '.join(allowed)}")
    return tuple(items)


@dataclass
class _Rule:
    verbs: tuple[str, ...]
    resources: tuple[str, ...]

    def matches(self, info: RequestInfo) -> bool:
        if self.verbs and info.verb not in self.verbs:
            return False
        if not self.resources:
            return True
        # "jobs", "jobs.batch", "jobs/status" and "jobs.batch/status" all name batch jobs' status writes
        names = [info.resource, f"{info.resource}.{info.group}"] if info.group else [info.resource]
        if info.subresource:
            names += [f"{name}/{info.subresource}" for name in names]
        return any(name in self.resources for name in names)


@dataclass
class ErrorRule(_Rule):
    """Fail `fraction` of the matching requests with `code`, at most `count` times (None: no limit)."""

    code: int = 500
    fraction: float = 1.0
    retry_after: int = 1
    count: int | None = None
    id: int = 0
    injected: int = 0

    def as_json(self) -> dict[str, Any]:
        return {"kind": "error", **asdict(self), "verbs": list(self.verbs), "resources": list(self.resources)}


@dataclass
class LatencyRule(_Rule):
    """Delay every matching request by `seconds` before it is served."""

    seconds: float = 0.0
    id: int = 0

    def as_json(self) -> dict[str, Any]:
        return {
            "kind": "latency",
            **asdict(self),
            "verbs": list(self.verbs),
            "resources": list(self.resources),
        }


def error_response(rule: ErrorRule, info: RequestInfo) -> web.Response:
    """The response a real API server gives for this kind of failure."""
    qualified = f"{info.resource}.{info.group}" if info.group else info.resource
    headers: dict[str, str] = {}
    if rule.code == 429:
        body = status_body(
            "Failure",
            message="Too many requests, please try again later.",
            reason="TooManyRequests",
            details={"retryAfterSeconds": rule.retry_after},
            code=429,
        )
        headers["Retry-After"] = str(rule.retry_after)
    elif rule.code == 409:
        details: dict[str, Any] = {"name": info.name, "kind": info.resource}
        if info.group:
            details["group"] = info.group
        message = (
            f'Operation cannot be fulfilled on {qualified} "{info.name}": the object has been modified; '
            "please apply your changes to the latest version and try again"
        )
        body = status_body(
            "Failure",
            message=message,
            reason="Conflict",
            details=details,
            code=409,
        )
    else:
        cause = "kubesim injected an internal error"
        message = f"Internal error occurred: {cause}"
        body = status_body(
            "Failure",
            message=message,
            reason="InternalError",
            details={"causes": [{"message": cause}]},
            code=500,
        )
    return web.Response(
        status=rule.code, body=orjson.dumps(body), content_type="application/json", headers=headers
    )
