"""ApiClient against kubesim over HTTP: verbs, patch types, typed errors, retries, watch, metadata-only."""

from __future__ import annotations

import time
from typing import Any

import pytest
from prometheus_client import REGISTRY

from manager.apimachinery.resources import CONFIGMAPS, JOBS, PODS, GroupVersionResource
from manager.client import (
    AlreadyExists,
    ApiClient,
    Conflict,
    ConnectError,
    Expired,
    Invalid,
    NotFound,
    ServerError,
    TooManyRequests,
    create_client,
)
from manager.client.config import RestConfig
from manager.client.discovery import ResourceNotFound, resolve


def configmap(name: str, ns: str = "default", **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns},
        "data": data,
    }


@pytest.fixture
async def client(kubesim: Any) -> Any:
    api = await create_client(kubeconfig=kubesim.kubeconfig, qps=0)
    yield api
    await api.close()


async def test_crud_and_patch_types(client: ApiClient) -> None:
    created = await client.create(CONFIGMAPS, configmap("a", x="1"))
    assert created["metadata"]["uid"] and created["data"] == {"x": "1"}
    got = await client.get(CONFIGMAPS, "a", "default")
    assert got["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]

    got["data"]["x"] = "2"
    updated = await client.update(CONFIGMAPS, got)
    assert updated["data"] == {"x": "2"}

    merged = await client.patch(CONFIGMAPS, "a", {"data": {"y": "3"}}, "default")
    assert merged["data"] == {"x": "2", "y": "3"}
    strategic = await client.patch(CONFIGMAPS, "a", {"data": {"z": "4"}}, "default", patch_type="strategic")
    assert strategic["data"]["z"] == "4"
    ops = [{"op": "replace", "path": "/data/x", "value": "9"}]
    jsonpatched = await client.patch(CONFIGMAPS, "a", ops, "default", patch_type="json")
    assert jsonpatched["data"]["x"] == "9"
    applied = await client.patch(
        CONFIGMAPS,
        "a",
        configmap("a", w="5"),
        "default",
        patch_type="apply",
        field_manager="test",
        force=True,
    )
    assert applied["data"]["w"] == "5"

    listed = await client.list(CONFIGMAPS, "default")
    assert [i["metadata"]["name"] for i in listed["items"]] == ["a"]
    assert listed["metadata"]["resourceVersion"]

    await client.delete(CONFIGMAPS, "a", "default", propagation_policy="Background")
    with pytest.raises(NotFound) as err:
        await client.get(CONFIGMAPS, "a", "default")
    assert err.value.status == 404 and err.value.reason == "NotFound"


async def test_typed_errors(client: ApiClient) -> None:
    await client.create(CONFIGMAPS, configmap("a"))
    with pytest.raises(AlreadyExists):
        await client.create(CONFIGMAPS, configmap("a"))
    stale = await client.get(CONFIGMAPS, "a", "default")
    await client.patch(CONFIGMAPS, "a", {"data": {"k": "v"}}, "default")
    with pytest.raises(Conflict):
        await client.update(CONFIGMAPS, stale)  # stale resourceVersion
    with pytest.raises(Conflict):
        await client.delete(CONFIGMAPS, "a", "default", preconditions={"uid": "not-the-uid"})
    with pytest.raises(NotFound):
        await client.delete(CONFIGMAPS, "missing", "default")


async def test_invalid_carries_causes(client: ApiClient) -> None:
    bad_pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": []},
    }
    with pytest.raises(Invalid) as invalid:
        await client.create(PODS, bad_pod)
    assert invalid.value.status == 422
    assert invalid.value.causes and all("field" in c for c in invalid.value.causes)


async def test_status_subresource_and_delete_collection(client: ApiClient) -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "default"},
        "spec": {
            "template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}
            }
        },
    }
    created = await client.create(JOBS, job)
    created["status"] = {"active": 3}
    updated = await client.update_status(JOBS, created)
    assert updated["status"]["active"] == 3
    for i in range(3):
        await client.create(
            CONFIGMAPS,
            {
                **configmap(f"c{i}"),
                "metadata": {
                    "name": f"c{i}",
                    "namespace": "default",
                    "labels": {"group": "g" if i < 2 else "h"},
                },
            },
        )
    await client.delete_collection(CONFIGMAPS, "default", label_selector="group=g")
    remaining = await client.list(CONFIGMAPS, "default")
    assert [i["metadata"]["name"] for i in remaining["items"]] == ["c2"]


async def test_writes_can_answer_without_managed_fields(client: ApiClient) -> None:
    created = await client.create(CONFIGMAPS, configmap("mf", a="1"), strip_managed_fields=True)
    assert created["data"] == {"a": "1"} and "managedFields" not in created["metadata"]
    created["data"] = {"a": "2"}
    updated = await client.update(CONFIGMAPS, created, strip_managed_fields=True)
    assert updated["data"] == {"a": "2"} and "managedFields" not in updated["metadata"]
    patched = await client.patch(CONFIGMAPS, "mf", {"data": {"b": "3"}}, "default", strip_managed_fields=True)
    assert patched["data"] == {"a": "2", "b": "3"} and "managedFields" not in patched["metadata"]
    # A write without managedFields keeps the server's; a plain answer still carries them.
    full = await client.get(CONFIGMAPS, "mf", "default")
    assert full["metadata"]["managedFields"]
    assert {k: v for k, v in full["metadata"].items() if k != "managedFields"} == patched["metadata"]


async def test_paging_with_continue(client: ApiClient) -> None:
    for i in range(7):
        await client.create(CONFIGMAPS, configmap(f"p{i}"))
    names: list[str] = []
    token = None
    pages = 0
    while True:
        page = await client.list(CONFIGMAPS, "default", limit=3, continue_token=token)
        names += [i["metadata"]["name"] for i in page["items"]]
        pages += 1
        token = page["metadata"].get("continue")
        if not token:
            break
    assert pages == 3 and sorted(names) == [f"p{i}" for i in range(7)]


async def test_watch_yields_events_and_expired_errors(client: ApiClient, kubesim: Any) -> None:
    start = await client.list(CONFIGMAPS, "default")
    rv = start["metadata"]["resourceVersion"]
    await client.create(CONFIGMAPS, configmap("w1"))
    await client.patch(CONFIGMAPS, "w1", {"data": {"a": "b"}}, "default")
    await client.delete(CONFIGMAPS, "w1", "default")
    seen = []
    async with client.watch(CONFIGMAPS, "default", resource_version=rv, timeout_seconds=5) as stream:
        async for event_type, obj in stream:
            seen.append((event_type, obj["metadata"]["name"]))
            if len(seen) == 3:
                break
    assert seen == [("ADDED", "w1"), ("MODIFIED", "w1"), ("DELETED", "w1")]

    kubesim.faults.compact()
    events = [e async for e in client.watch(CONFIGMAPS, "default", resource_version=rv, timeout_seconds=5)]
    assert events and events[0][0] == "ERROR"
    from manager.client import error_from_status

    assert isinstance(error_from_status(events[0][1]), Expired)


async def test_metadata_only_list_and_get(client: ApiClient) -> None:
    await client.create(CONFIGMAPS, configmap("m", big="x" * 1000))
    listed = await client.list(CONFIGMAPS, "default", metadata_only=True)
    assert listed["kind"] == "PartialObjectMetadataList"
    assert listed["items"][0]["kind"] == "PartialObjectMetadata" and "data" not in listed["items"][0]
    one = await client.get(CONFIGMAPS, "m", "default", metadata_only=True)
    assert one["kind"] == "PartialObjectMetadata" and one["metadata"]["name"] == "m"


@pytest.mark.slow
async def test_429_is_retried_honouring_retry_after(kubesim: Any) -> None:
    client = await create_client(kubeconfig=kubesim.kubeconfig, qps=0)
    try:
        kubesim.faults.fail(429, verb="list", resource="configmaps", retry_after=1, count=2)
        before = (
            REGISTRY.get_sample_value(
                "rest_client_requests_total", {"code": "429", "method": "GET", "host": client.host}
            )
            or 0.0
        )
        started = time.monotonic()
        await client.list(CONFIGMAPS, "default")
        assert time.monotonic() - started >= 2.0  # two Retry-After: 1 waits
        after = REGISTRY.get_sample_value(
            "rest_client_requests_total", {"code": "429", "method": "GET", "host": client.host}
        )
        assert after == before + 2
        # after max_retries the typed error surfaces
        client.max_retries = 1
        kubesim.faults.fail(429, verb="get", resource="configmaps", retry_after=0, count=5)
        with pytest.raises(TooManyRequests):
            await client.get(CONFIGMAPS, "x", "default")
    finally:
        await client.close()


async def test_500_without_retry_after_is_not_retried(client: ApiClient, kubesim: Any) -> None:
    rule = kubesim.faults.fail(500, verb="create", resource="configmaps", count=1)
    with pytest.raises(ServerError):
        await client.create(CONFIGMAPS, configmap("once"))
    assert rule.injected == 1
    await client.create(CONFIGMAPS, configmap("once"))  # the fault is spent


async def test_the_root_remembers_when_any_component_last_got_an_answer(
    client: ApiClient, kubesim: Any
) -> None:
    """What lets the API server probe skip a probe while traffic shows the server up: an answer below 500 to
    any component, a 404 included, moves the root's `last_answer`; a 500 does not."""
    component = client.for_component("someone")
    assert client.root.last_answer is None
    before = time.monotonic()
    with pytest.raises(NotFound):
        await component.get(CONFIGMAPS, "absent", "default")
    first = client.root.last_answer
    assert first is not None and before <= first <= time.monotonic()
    kubesim.faults.fail(500, verb="create", resource="configmaps", count=1)
    with pytest.raises(ServerError):
        await component.create(CONFIGMAPS, configmap("unlucky"))
    assert client.root.last_answer == first
    await client.create(CONFIGMAPS, configmap("lucky"))
    assert (client.root.last_answer or 0) > first


async def test_connection_refused_is_retried_then_raised() -> None:
    slept: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)

    client = ApiClient(RestConfig(host="http://127.0.0.1:9"), max_retries=3, sleep=fake_sleep)
    try:
        with pytest.raises(ConnectError):
            await client.create(CONFIGMAPS, configmap("x"))
        assert len(slept) == 3  # nothing was sent: safe to retry even a POST
    finally:
        await client.close()


async def test_client_side_rate_limit(kubesim: Any) -> None:
    client = await create_client(kubeconfig=kubesim.kubeconfig, qps=20, burst=2)
    try:
        started = time.monotonic()
        for _ in range(8):
            await client.list(CONFIGMAPS, "default")
        assert time.monotonic() - started >= 0.28  # 2 from the burst, 6 more at 20/s
    finally:
        await client.close()


async def test_discovery_resolves_by_kind_and_plural(client: ApiClient) -> None:
    cronjobs = await resolve(client, "batch", "v1", "CronJob")
    assert cronjobs == GroupVersionResource("batch", "v1", "cronjobs", "CronJob", namespaced=True)
    assert await resolve(client, "batch", "v1", "cronjobs") == cronjobs
    assert await resolve(client, "", "v1", "Pod") == PODS
    with pytest.raises(ResourceNotFound):
        await resolve(client, "batch", "v1", "Nope")
    with pytest.raises(ResourceNotFound):
        await resolve(client, "nope.example.com", "v1", "Thing")


async def test_discovery_finds_a_new_custom_resource(client: ApiClient) -> None:
    from manager.apimachinery.resources import CUSTOMRESOURCEDEFINITIONS

    with pytest.raises(ResourceNotFound):
        await resolve(client, "example.aiokcm.io", "v1", "Widget")
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.aiokcm.io"},
        "spec": {
            "group": "example.aiokcm.io",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                    },
                }
            ],
        },
    }
    await client.create(CUSTOMRESOURCEDEFINITIONS, crd)

    async def found() -> GroupVersionResource | None:
        try:
            return await resolve(client, "example.aiokcm.io", "v1", "Widget")
        except ResourceNotFound:
            return None

    from tests.helpers import wait_for

    widgets = await wait_for(found, timeout=10)
    assert widgets == GroupVersionResource("example.aiokcm.io", "v1", "widgets", "Widget", namespaced=True)
    created = await client.create(
        widgets,
        {
            "apiVersion": "example.aiokcm.io/v1",
            "kind": "Widget",
            "metadata": {"name": "w", "namespace": "default"},
        },
    )
    assert created["metadata"]["uid"]
    assert (await client.get(widgets, "w", "default"))["kind"] == "Widget"


async def test_request_metrics_count_every_request(client: ApiClient) -> None:
    def sample(name: str, labels: dict[str, str]) -> float:
        return REGISTRY.get_sample_value(name, labels) or 0.0

    ok = {"code": "200", "method": "GET", "host": client.host}
    get = {"verb": "GET", "host": client.host}
    before = (
        sample("rest_client_requests_total", ok),
        sample("rest_client_request_duration_seconds_count", get),
    )
    await client.create(CONFIGMAPS, configmap("counted"))
    for _ in range(5):
        await client.get(CONFIGMAPS, "counted", "default")
    with pytest.raises(NotFound):
        await client.get(CONFIGMAPS, "absent", "default")
    assert sample("rest_client_requests_total", ok) == before[0] + 5
    assert sample("rest_client_requests_total", {**ok, "code": "404"}) >= 1
    count = sample("rest_client_request_duration_seconds_count", get)
    assert count == before[1] + 6  # the 404 took time too
    assert sample("rest_client_request_duration_seconds_bucket", {**get, "le": "+Inf"}) == count
    assert sample("rest_client_request_duration_seconds_sum", get) > 0


async def test_rate_limiter_metric_observes_every_limited_request(kubesim: Any) -> None:
    client = await create_client(kubeconfig=kubesim.kubeconfig, qps=1000, burst=2)
    component = client.for_component("limited")  # shares the cached series, its own bucket
    try:
        labels = {"verb": "GET", "host": client.host}
        before = REGISTRY.get_sample_value("rest_client_rate_limiter_duration_seconds_count", labels) or 0.0
        for api in (client, client, component, client):
            await api.list(CONFIGMAPS, "default")
        await component.create(CONFIGMAPS, configmap("limited"))
        after = REGISTRY.get_sample_value("rest_client_rate_limiter_duration_seconds_count", labels)
        assert after == before + 4
        posts = {"verb": "POST", "host": client.host}
        assert REGISTRY.get_sample_value("rest_client_rate_limiter_duration_seconds_count", posts)
    finally:
        await client.close()


async def test_raw_requests_get_the_verbs_retries_errors_and_write_gate(kubesim: Any) -> None:
    # request_raw (a write whose answer is not decoded, as the Job controller's finalizer patch) shares the
    # verbs' path: a 429 is retried, an error answer raises its typed error, and the write gate applies.
    client = await create_client(kubeconfig=kubesim.kubeconfig, qps=0)
    refusals: list[str] = []

    def gate() -> None:
        if refusals:
            raise RuntimeError(refusals[-1])

    gated = client.for_component("gated", write_gate=gate)
    try:
        await client.create(CONFIGMAPS, configmap("raw"))
        path = CONFIGMAPS.api_path("default", "raw")
        rule = kubesim.faults.fail(429, verb="patch", resource="configmaps", retry_after=0, count=1)
        merge = "application/merge-patch+json"
        answer = await gated.request_raw("PATCH", path, body=b'{"data":{"k":"v"}}', content_type=merge)
        assert rule.injected == 1 and b'"k":"v"' in answer
        with pytest.raises(NotFound):
            await gated.request_raw(
                "PATCH", CONFIGMAPS.api_path("default", "gone"), body=b"{}", content_type=merge
            )
        refusals.append("not the leader")
        with pytest.raises(RuntimeError, match="not the leader"):
            await gated.request_raw("PATCH", path, body=b'{"data":{"k":"w"}}', content_type=merge)
        assert (await client.get(CONFIGMAPS, "raw", "default"))["data"] == {"k": "v"}
        assert await gated.request_raw("GET", path)  # reads are not gated
    finally:
        await client.close()


async def test_writes_can_answer_with_metadata_only(client: ApiClient) -> None:
    """`metadata_only` on a write: the same write, answered as a PartialObjectMetadata (what the apiserver's
    transformResponseObject gives every verb), and the same typed errors."""
    created = await client.create(CONFIGMAPS, configmap("po", a="1"), metadata_only=True)
    assert created["kind"] == "PartialObjectMetadata" and "data" not in created
    assert created["metadata"]["name"] == "po" and created["metadata"]["managedFields"]
    stored = await client.get(CONFIGMAPS, "po", "default")
    assert stored["data"] == {"a": "1"}
    assert stored["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]

    stored["data"] = {"a": "2"}
    updated = await client.update(CONFIGMAPS, stored, metadata_only=True, strip_managed_fields=True)
    assert updated["kind"] == "PartialObjectMetadata" and "managedFields" not in updated["metadata"]
    assert updated["metadata"]["resourceVersion"] != created["metadata"]["resourceVersion"]
    patched = await client.patch(CONFIGMAPS, "po", {"data": {"b": "3"}}, "default", metadata_only=True)
    assert patched["kind"] == "PartialObjectMetadata" and "data" not in patched
    after = await client.get(CONFIGMAPS, "po", "default")
    assert after["data"] == {"a": "2", "b": "3"}
    assert after["metadata"]["resourceVersion"] == patched["metadata"]["resourceVersion"]

    # A generated name comes back in the metadata; a status PUT answers its new resourceVersion.
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"generateName": "g-", "namespace": "default"},
        "spec": {
            "template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}
            }
        },
    }
    made = await client.create(JOBS, job, metadata_only=True, strip_managed_fields=True)
    name = made["metadata"]["name"]
    assert name.startswith("g-") and len(name) > 2 and "spec" not in made
    full = await client.get(JOBS, name, "default")
    full["status"] = {"active": 2}
    answer = await client.update_status(JOBS, full, metadata_only=True)
    assert answer["kind"] == "PartialObjectMetadata" and "status" not in answer
    assert (await client.get(JOBS, name, "default"))["status"]["active"] == 2
    assert answer["metadata"]["resourceVersion"] != full["metadata"]["resourceVersion"]

    # Errors are the verbs' own: AlreadyExists, Conflict (a stale resourceVersion), NotFound.
    with pytest.raises(AlreadyExists):
        await client.create(CONFIGMAPS, configmap("po"), metadata_only=True)
    with pytest.raises(Conflict):
        await client.update_status(JOBS, full, metadata_only=True)
    with pytest.raises(NotFound):
        await client.patch(CONFIGMAPS, "none", {"data": {}}, "default", metadata_only=True)
