"""NamespaceDeleter against an in-memory API: the Delete steps, ordered content deletion, the fallbacks for
resources without deletecollection, and what stops the namespace from being released."""

from __future__ import annotations

import builtins
import copy
from collections.abc import Iterable
from typing import Any

import pytest
import structlog

from controllers.namespace.conditions import CONTENT_FAILURE, CONTENT_REMAINING, DISCOVERY_FAILURE
from controllers.namespace.deleter import ContentDeletionFailed, NamespaceDeleter, ResourcesRemaining
from manager import (
    CONFIGMAPS,
    NAMESPACES,
    PODS,
    ApiError,
    ApiResource,
    Conflict,
    Discovery,
    GroupVersionResource,
    NotFound,
)

NOW = 1_700_000_000.0
DELETED = "2023-11-14T22:13:20Z"  # NOW
ALL = frozenset({"get", "list", "delete", "deletecollection", "create", "watch"})
WIDGETS: GroupVersionResource = GroupVersionResource("example.io", "v1", "widgets", "Widget")
SECRETS: GroupVersionResource = GroupVersionResource("", "v1", "secrets", "Secret")
Obj = dict[str, Any]


class FakeApi:
    """Namespace `ns` and its objects by resource; DELETE marks objects with finalizers or (pods) a grace
    period, removes the rest. Every call is recorded."""

    def __init__(self, namespace: Obj, objects: dict[str, list[Obj]] | None = None) -> None:
        self.namespace: Obj | None = namespace
        self.objects = objects or {}
        self.calls: list[tuple[Any, ...]] = []
        self.fail: dict[tuple[str, str], Exception] = {}  # (verb, resource) -> raised
        self.conflicts = 0  # the next status writes that answer 409
        self.pods_linger = False  # deleted pods stay (graceful deletion under way)
        self.rv = 1

    def _raise(self, verb: str, resource: str) -> None:
        if (verb, resource) in self.fail:
            raise self.fail[(verb, resource)]

    async def get(self, gvr: GroupVersionResource, name: str, namespace: str | None = None) -> Obj:
        self.calls.append(("get", gvr.resource, name))
        if self.namespace is None:
            raise NotFound(404, "NotFound")
        return copy.deepcopy(self.namespace)

    def _write(self, body: Obj) -> Obj:
        assert self.namespace is not None
        if self.conflicts:
            self.conflicts -= 1
            raise Conflict(409, "Conflict")
        if body["metadata"].get("resourceVersion") != self.namespace["metadata"]["resourceVersion"]:
            raise Conflict(409, "Conflict")
        self.rv += 1
        body = copy.deepcopy(body)
        body["metadata"]["resourceVersion"] = str(self.rv)
        return body

    async def update_status(self, gvr: GroupVersionResource, body: Obj) -> Obj:
        self.calls.append(("update_status", body["status"].get("phase")))
        assert self.namespace is not None
        written = self._write(body)
        self.namespace = {**self.namespace, "status": written["status"], "metadata": written["metadata"]}
        return copy.deepcopy(self.namespace)

    async def update(self, gvr: GroupVersionResource, body: Obj, *, subresource: str | None = None) -> Obj:
        self.calls.append(("update", subresource, body["spec"].get("finalizers")))
        assert self.namespace is not None
        written = self._write(body)
        self.namespace = {**self.namespace, "spec": written["spec"], "metadata": written["metadata"]}
        return copy.deepcopy(self.namespace)

    async def list(self, gvr: GroupVersionResource, namespace: str, *, metadata_only: bool = False) -> Obj:
        self.calls.append(("list", gvr.resource, metadata_only))
        self._raise("list", gvr.resource)
        return {"items": copy.deepcopy(self.objects.get(gvr.resource, []))}

    def _delete(self, gvr: GroupVersionResource, names: Iterable[str]) -> None:
        kept = []
        for obj in self.objects.get(gvr.resource, []):
            meta = obj["metadata"]
            if meta["name"] not in names:
                kept.append(obj)
            elif meta.get("finalizers") or (gvr.resource == "pods" and self.pods_linger):
                meta["deletionTimestamp"] = DELETED
                kept.append(obj)
        self.objects[gvr.resource] = kept

    async def delete_collection(
        self, gvr: GroupVersionResource, namespace: str, *, propagation_policy: str | None = None
    ) -> Obj:
        self.calls.append(("deletecollection", gvr.resource, propagation_policy))
        self._raise("deletecollection", gvr.resource)
        self._delete(gvr, [o["metadata"]["name"] for o in self.objects.get(gvr.resource, [])])
        return {}

    async def delete(
        self, gvr: GroupVersionResource, name: str, namespace: str, *, propagation_policy: str | None = None
    ) -> Obj:
        self.calls.append(("delete", gvr.resource, name, propagation_policy))
        self._raise("delete", gvr.resource)
        self._delete(gvr, [name])
        return {}

    def verbs(self, *names: str) -> builtins.list[tuple[Any, ...]]:
        return [c for c in self.calls if c[0] in names]


def terminating(finalizers: list[str] | None = None, phase: str = "Active") -> Obj:
    return {
        "metadata": {"name": "ns", "uid": "u1", "resourceVersion": "1", "deletionTimestamp": DELETED},
        "spec": {"finalizers": ["kubernetes"] if finalizers is None else finalizers},
        "status": {"phase": phase},
    }


def obj(name: str, finalizers: list[str] | None = None, **spec: Any) -> Obj:
    meta: Obj = {"name": name, "namespace": "ns"}
    if finalizers:
        meta["finalizers"] = finalizers
    return {"metadata": meta, "spec": spec, "status": {"phase": "Running"}}


def discovery(
    *resources: tuple[GroupVersionResource, frozenset[str]], failed: dict[str, str] | None = None
) -> Any:
    found = Discovery(tuple(ApiResource(gvr, verbs) for gvr, verbs in resources), failed or {})

    async def discover(client: Any) -> Discovery:
        return found

    return discover


STANDARD = discovery(
    (CONFIGMAPS, ALL), (PODS, ALL), (NAMESPACES, ALL), (SECRETS, frozenset({"create", "list"}))
)


def deleter(api: FakeApi, discover: Any = STANDARD, now: float = NOW) -> NamespaceDeleter:
    return NamespaceDeleter(api, lambda: now, structlog.get_logger(), discover=discover)  # type: ignore[arg-type]


def conditions(api: FakeApi) -> dict[str, Obj]:
    assert api.namespace is not None
    return {c["type"]: c for c in api.namespace["status"].get("conditions") or ()}


async def test_an_empty_namespace_is_marked_terminating_then_released_through_finalize() -> None:
    api = FakeApi(terminating(["kubernetes", "b/x", "a/y"]))
    await deleter(api).delete("ns")
    assert api.verbs("update_status")[0] == ("update_status", "Terminating")
    assert api.verbs("update") == [("update", "finalize", ["a/y", "b/x"])]  # less `kubernetes`, sorted
    assert not api.verbs("delete")  # the namespace itself is never deleted
    assert {c["reason"] for c in conditions(api).values()} >= {"ContentRemoved", "ContentHasNoFinalizers"}
    # Cluster-scoped and undeletable resources are left out; the rest is deleted in the background.
    assert api.verbs("deletecollection") == [
        ("deletecollection", "pods", "Background"),
        ("deletecollection", "configmaps", "Background"),
    ]


async def test_a_namespace_not_being_deleted_or_already_finalized_is_left_alone() -> None:
    active = terminating()
    del active["metadata"]["deletionTimestamp"]
    api = FakeApi(active)
    await deleter(api).delete("ns")
    assert api.calls == [("get", "namespaces", "ns")]

    api = FakeApi(terminating([], phase="Terminating"))
    await deleter(api).delete("ns")
    assert api.calls == [("get", "namespaces", "ns")]

    missing = FakeApi(terminating())
    missing.namespace = None
    await deleter(missing).delete("ns")


async def test_pods_go_first_and_the_rest_waits_while_they_remain() -> None:
    api = FakeApi(
        terminating(), {"pods": [obj("p", terminationGracePeriodSeconds=30)], "configmaps": [obj("c")]}
    )
    api.pods_linger = True
    with pytest.raises(ResourcesRemaining) as remaining:
        await deleter(api, now=NOW + 10).delete("ns")
    assert remaining.value.estimate == 30
    assert [c[1] for c in api.verbs("deletecollection")] == ["pods"]
    assert api.objects["configmaps"] == [obj("c")]
    assert (
        conditions(api)[CONTENT_REMAINING]["message"]
        == "Some resources are remaining: pods. has 1 resource instances"
    )
    assert not api.verbs("update")

    api.objects["pods"] = []  # the kubelet is done
    await deleter(api, now=NOW + 20).delete("ns")
    assert api.objects["configmaps"] == []
    assert api.verbs("update") == [("update", "finalize", [])]


async def test_pods_still_there_after_their_grace_period_are_an_error() -> None:
    api = FakeApi(terminating(), {"pods": [obj("p", terminationGracePeriodSeconds=30)]})
    api.pods_linger = True
    with pytest.raises(ContentDeletionFailed, match="unexpected items still remain in namespace: ns"):
        await deleter(api, now=NOW + 30).delete("ns")
    assert conditions(api)[CONTENT_FAILURE]["message"] == (
        "Failed to delete all resource types, 1 remaining: "
        "unexpected items still remain in namespace: ns for gvr: /v1, Resource=pods"
    )
    assert not api.verbs("update")


async def test_finalizers_give_a_fixed_estimate() -> None:
    api = FakeApi(terminating(), {"configmaps": [obj("held", ["example.com/f"]), obj("plain")]})
    with pytest.raises(ResourcesRemaining) as remaining:
        await deleter(api).delete("ns")
    assert remaining.value.estimate == 15
    assert [o["metadata"]["name"] for o in api.objects["configmaps"]] == ["held"]


async def test_without_deletecollection_each_object_is_deleted_and_404s_are_ignored() -> None:
    api = FakeApi(terminating(), {"widgets": [obj("a"), obj("b")]})
    api.fail[("delete", "widgets")] = NotFound(404, "NotFound")
    discover = discovery((WIDGETS, frozenset({"list", "delete"})))
    with pytest.raises(ContentDeletionFailed, match="widgets"):  # the 404s left them there
        await deleter(api, discover).delete("ns")
    assert api.verbs("delete") == [
        ("delete", "widgets", "a", "Background"),
        ("delete", "widgets", "b", "Background"),
    ]
    assert not api.verbs("deletecollection")


async def test_a_405_on_deletecollection_is_remembered() -> None:
    api = FakeApi(terminating(), {"widgets": [obj("a")]})
    api.fail[("deletecollection", "widgets")] = ApiError(405, "MethodNotAllowed")
    discover = discovery((WIDGETS, ALL))
    the_deleter = deleter(api, discover)
    await the_deleter.delete("ns")
    assert api.objects["widgets"] == [] and len(api.verbs("deletecollection")) == 1

    api.namespace = terminating(phase="Terminating")
    api.objects["widgets"] = [obj("b")]
    await the_deleter.delete("ns")
    assert len(api.verbs("deletecollection")) == 1  # not asked again
    assert api.verbs("delete")[-1] == ("delete", "widgets", "b", "Background")


async def test_discovery_failures_are_reported_and_block_the_release() -> None:
    api = FakeApi(terminating(), {"configmaps": [obj("c")]})
    discover = discovery((CONFIGMAPS, ALL), failed={"metrics.k8s.io/v1beta1": "503"})
    with pytest.raises(ContentDeletionFailed):
        await deleter(api, discover).delete("ns")
    assert api.objects["configmaps"] == []  # what could be seen is still deleted
    assert conditions(api)[DISCOVERY_FAILURE]["status"] == "True"
    assert not api.verbs("update")

    async def broken(client: Any) -> Discovery:
        raise ApiError(503, "ServiceUnavailable", "the server is currently unable to handle the request")

    with pytest.raises(ContentDeletionFailed):
        await deleter(api, broken).delete("ns")
    assert (
        conditions(api)[DISCOVERY_FAILURE]["message"]
        == "the server is currently unable to handle the request"
    )


async def test_other_errors_fail_the_pass_after_trying_every_resource() -> None:
    api = FakeApi(terminating(), {"configmaps": [obj("c")], "widgets": [obj("w")]})
    api.fail[("deletecollection", "configmaps")] = ApiError(500, "InternalError", "etcd is down")
    with pytest.raises(ContentDeletionFailed, match="etcd is down"):
        await deleter(api, discovery((CONFIGMAPS, ALL), (WIDGETS, ALL))).delete("ns")
    assert api.objects["widgets"] == []
    assert "etcd is down" in conditions(api)[CONTENT_FAILURE]["message"]


async def test_status_writes_are_retried_on_conflict_while_the_uid_stays() -> None:
    api = FakeApi(terminating())
    api.conflicts = 1
    await deleter(api).delete("ns")
    assert api.verbs("update_status")[:2] == [("update_status", "Terminating")] * 2
    assert api.verbs("update") == [("update", "finalize", [])]

    api = FakeApi(terminating())
    api.conflicts = 1
    original_get = api.get

    async def replaced(gvr: GroupVersionResource, name: str, namespace: str | None = None) -> Obj:
        found = await original_get(gvr, name, namespace)
        if len(api.verbs("get")) > 1:
            found["metadata"]["uid"] = "u2"  # deleted and created again meanwhile
        return found

    api.get = replaced  # type: ignore[method-assign]
    with pytest.raises(RuntimeError, match="uid has changed"):
        await deleter(api).delete("ns")
