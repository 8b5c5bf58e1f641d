"""What every handler needs: the store, the registry, the clock, and response/encoding helpers."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web

from kubesim.api import leanresponse
from kubesim.resources import eventsview
from kubesim.resources.catalog import Registry
from kubesim.resources.types import ResourceType
from kubesim.status import errors
from kubesim.status.body import status_body
from kubesim.storage.store import Entry, Store
from kubesim.storage.watch import WatchHub

JSON = dict[str, Any]
GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
GENERATE_NAME_ATTEMPTS = 8
JSON_CT = "application/json"


@dataclass(frozen=True)
class AdmissionRequest:
    """What a validating admission plugin sees of a create or update: the HTTP request (whose user the auth
    middleware left), the type, where, and the object before (None on create) and after, as stored."""

    request: web.Request
    rtype: ResourceType
    namespace: str
    name: str
    subresource: str | None
    obj: JSON
    old: JSON | None


# A validating admission plugin: raises an ApiError to refuse the write (kubesim.auth.ownerrefs).
AdmissionHook = Callable[[AdmissionRequest], None]


@dataclass
class ApiContext:
    store: Store
    registry: Registry
    watches: WatchHub
    clock: Callable[[], float]
    max_body_bytes: int = 3 * 1024 * 1024
    bookmark_interval: float = 60.0  # kube-apiserver sends a bookmark about once a minute
    seed: int | None = None
    rng: random.Random = field(default_factory=random.Random)
    background: set[Any] = field(default_factory=set)  # tasks kept alive (CRD cleanup)
    # how long a get/list for a resourceVersion newer than the store's waits for it before 504 (upstream: 3 s)
    too_new_wait: float = 3.0
    # the validating admission plugins enabled (--enable-admission-plugins): after validation, before writing
    admission: list[AdmissionHook] = field(default_factory=list)

    def admit(self, request: AdmissionRequest) -> None:
        for hook in self.admission:
            hook(request)

    def generate_name(self, prefix: str) -> str:
        """generateName + 5 random characters; the prefix is cut so that the result fits a DNS label."""
        suffix = "".join(self.rng.choice(GENERATE_ALPHABET) for _ in range(5))
        return prefix[: 63 - len(suffix)] + suffix

    def generate_free_name(self, prefix: str, resource: str, namespace: str) -> str:
        """A generated name not in use yet: a collision is retried with a new name (the apiserver's
        RetryGenerateName, GA in 1.32, tries up to 8 names); the last one is returned if all are taken, so
        that the create answers 409 AlreadyExists as upstream."""
        name = self.generate_name(prefix)
        for _ in range(GENERATE_NAME_ATTEMPTS - 1):
            if self.store.entry(resource, namespace, name) is None:
                break
            name = self.generate_name(prefix)
        return name

    def namespace_entry(self, name: str) -> Entry | None:
        return self.store.entry("namespaces", "", name)


def to_view(rtype: ResourceType, obj: JSON) -> JSON:
    """The stored object as the served type shows it (events.k8s.io/v1 is a view of core events)."""
    if rtype.store_group is not None:
        return eventsview.to_events_v1(obj)
    if rtype.crd is not None and obj.get("apiVersion") != rtype.api_version:
        return {
            **obj,
            "apiVersion": rtype.api_version,
        }  # CRD conversion strategy None: only apiVersion changes
    return obj


def multi_version(rtype: ResourceType) -> bool:
    """A custom resource served in several versions: stored objects may need their apiVersion rewritten."""
    return (
        rtype.crd is not None
        and sum(1 for v in rtype.crd.get("spec", {}).get("versions") or [] if v.get("served", True)) > 1
    )


def from_view(rtype: ResourceType, obj: JSON) -> JSON:
    if rtype.store_group is not None:
        return eventsview.to_core(obj)
    return obj


def encode(rtype: ResourceType, entry: Entry) -> bytes:
    if rtype.store_group is not None:
        return orjson.dumps(eventsview.to_events_v1(entry.obj))
    if rtype.crd is not None and entry.obj.get("apiVersion") != rtype.api_version:
        return orjson.dumps(to_view(rtype, entry.obj))
    return entry.data


def json_response(
    body: JSON | bytes, status: int = 200, headers: dict[str, str] | None = None
) -> web.Response:
    data = body if isinstance(body, bytes) else orjson.dumps(body)
    if headers is None:
        return leanresponse.json_response(data, status)
    return web.Response(body=data, status=status, content_type=JSON_CT, headers=headers)


def error_response(err: errors.ApiError) -> web.Response:
    return json_response(err.status(), err.code, headers=err.headers or None)


def success_status(rtype: ResourceType, name: str, uid: str) -> JSON:
    details: JSON = {"name": name}
    if rtype.group:
        details["group"] = rtype.group
    details["kind"] = rtype.plural
    details["uid"] = uid
    return status_body("Success", details=details)
