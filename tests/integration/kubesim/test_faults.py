"""Fault injection, over the /kubesim/faults admin paths and from Python, seen by a client over real HTTP."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import orjson
import pytest

from kubesim.pytest_plugin import KubeSimFactory
from tests.helpers import wait_for

Obj = dict[str, Any]
CMS = "/api/v1/namespaces/default/configmaps"


class Api:
    def __init__(self, session: aiohttp.ClientSession, url: str) -> None:
        self.session = session
        self.url = url

    async def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any, Any]:
        data = None if body is None else orjson.dumps(body)
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        async with self.session.request(method, self.url + path, data=data, headers=headers) as resp:
            raw = await resp.read()
            return resp.status, orjson.loads(raw) if raw else None, resp.headers

    async def ok(self, method: str, path: str, body: Any = None) -> Any:
        status, payload, _ = await self.call(method, path, body)
        assert status < 300, (method, path, status, payload)
        return payload


def configmap(name: str, value: str = "v") -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": value}}


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as s:
        yield s


@pytest.fixture
def api(kubesim: Any, session: aiohttp.ClientSession) -> Api:
    return Api(session, kubesim.url)


def assert_status(payload: Obj, code: int, reason: str) -> None:
    assert payload["kind"] == "Status" and payload["apiVersion"] == "v1"
    assert (payload["status"], payload["code"], payload["reason"]) == ("Failure", code, reason)
    assert payload["message"]


async def test_500_for_a_verb_and_resource_with_a_count(api: Api) -> None:
    await api.ok("POST", CMS, configmap("a"))
    rule = await api.ok(
        "POST", "/kubesim/faults/errors", {"verb": "list", "resource": "configmaps", "count": 2}
    )
    assert rule["code"] == 500
    codes = []
    for _ in range(3):
        status, payload, _ = await api.call("GET", CMS)
        codes.append(status)
        if status == 500:
            assert_status(payload, 500, "InternalError")
    assert codes == [500, 500, 200]
    assert (await api.call("GET", f"{CMS}/a"))[0] == 200  # get is another verb
    assert (await api.call("GET", "/api/v1/namespaces"))[0] == 200  # and namespaces another resource
    rules = await api.ok("GET", "/kubesim/faults")
    assert rules["errors"][0]["injected"] == 2


async def test_429_carries_retry_after_and_nothing_is_written(api: Api) -> None:
    body = {"verb": "create", "resource": "configmaps", "code": 429, "retry_after": 2}
    await api.ok("POST", "/kubesim/faults/errors", body)
    status, payload, headers = await api.call("POST", CMS, configmap("throttled"))
    assert status == 429 and headers["Retry-After"] == "2"
    assert_status(payload, 429, "TooManyRequests")
    assert payload["details"]["retryAfterSeconds"] == 2
    await api.ok("DELETE", "/kubesim/faults")
    assert (await api.call("GET", f"{CMS}/throttled"))[0] == 404
    await api.ok("POST", CMS, configmap("throttled"))


async def test_409_from_python_leaves_the_object_unchanged(kubesim: Any, api: Api) -> None:
    created = await api.ok("POST", CMS, configmap("c", "old"))
    kubesim.faults.fail(409, verb="update", resource="configmaps", count=1)
    changed = {**created, "data": {"k": "new"}}
    status, payload, _ = await api.call("PUT", f"{CMS}/c", changed)
    assert status == 409
    assert_status(payload, 409, "Conflict")
    assert 'configmaps "c"' in payload["message"] and "the object has been modified" in payload["message"]
    assert (await api.ok("GET", f"{CMS}/c"))["data"] == {"k": "old"}
    assert (await api.ok("PUT", f"{CMS}/c", changed))["data"] == {"k": "new"}  # count=1 is used up


async def test_subresource_rules_only_hit_the_subresource(kubesim: Any, api: Api) -> None:
    kubesim.faults.fail(500, resource="namespaces/status")
    assert (await api.call("GET", "/api/v1/namespaces/default"))[0] == 200
    assert (await api.call("GET", "/api/v1/namespaces/default/status"))[0] == 500


async def test_group_qualified_resources(kubesim: Any, api: Api) -> None:
    labels = {"app": "d"}
    template = {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": template},
    }
    path = "/apis/apps/v1/namespaces/default/deployments/d"
    await api.ok("POST", "/apis/apps/v1/namespaces/default/deployments", deployment)
    kubesim.faults.fail(429, resource="deployments.apps/scale")
    assert (await api.call("GET", path))[0] == 200
    assert (await api.call("GET", f"{path}/scale"))[0] == 429
    kubesim.faults.fail(500, resource="deployments.batch")  # another group: never matches
    assert (await api.call("GET", path))[0] == 200


async def _failure_pattern(factory: KubeSimFactory, session: aiohttp.ClientSession, seed: int) -> list[int]:
    sim = await factory(seed=seed, kubelet=False)
    api = Api(session, sim.url)
    await api.ok("POST", "/kubesim/faults/errors", {"verb": "get", "fraction": 0.5, "code": 500})
    return [(await api.call("GET", "/api/v1/namespaces/default"))[0] for _ in range(40)]


async def test_fractions_are_deterministic_under_a_seed(
    kubesim_factory: KubeSimFactory, session: aiohttp.ClientSession
) -> None:
    first = await _failure_pattern(kubesim_factory, session, 7)
    second = await _failure_pattern(kubesim_factory, session, 7)
    other = await _failure_pattern(kubesim_factory, session, 8)
    assert first == second
    assert 0 < first.count(500) < 40 and set(first) == {200, 500}
    assert other != first


async def test_latency_delays_matching_requests(api: Api) -> None:
    await api.ok("POST", "/kubesim/faults/latency", {"seconds": 0.3, "verb": "get", "resource": "namespaces"})
    started = time.monotonic()
    await api.ok("GET", "/api/v1/namespaces/default")
    assert time.monotonic() - started >= 0.3
    rules = await api.ok("GET", "/kubesim/faults")
    assert rules["latency"][0]["seconds"] == 0.3
    cleared = await api.ok("DELETE", "/kubesim/faults")
    assert cleared == {"errors": [], "latency": []}


async def test_latency_from_python(kubesim: Any, api: Api) -> None:
    kubesim.faults.add_latency(0.2, verb="list")
    started = time.monotonic()
    await api.ok("GET", CMS)
    assert time.monotonic() - started >= 0.2


async def test_admin_and_discovery_paths_are_never_faulted(api: Api) -> None:
    await api.ok("POST", "/kubesim/faults/errors", {"code": 500})
    assert (await api.call("GET", "/version"))[0] == 200
    assert (await api.call("GET", "/kubesim/faults"))[0] == 200
    assert (await api.call("GET", CMS))[0] == 500
    await api.ok("DELETE", "/kubesim/faults")
    assert (await api.call("GET", CMS))[0] == 200


@pytest.mark.parametrize(
    "body",
    [{"code": 418}, {"verb": "fetch"}, {"fraction": 2}, {"count": -1}, {"resource": 5}],
)
async def test_bad_rules_are_rejected(api: Api, body: Obj) -> None:
    status, payload, _ = await api.call("POST", "/kubesim/faults/errors", body)
    assert status == 400
    assert_status(payload, 400, "BadRequest")
    assert (await api.ok("GET", "/kubesim/faults"))["errors"] == []


async def test_close_watches_ends_open_streams(
    kubesim: Any, api: Api, session: aiohttp.ClientSession
) -> None:
    rv = (await api.ok("GET", CMS))["metadata"]["resourceVersion"]
    async with session.get(f"{kubesim.url}{CMS}?watch=true&resourceVersion={rv}") as resp:
        assert resp.status == 200
        await wait_for(lambda: kubesim.watches.open_count == 1, message="watch open")
        closed = await api.ok("POST", "/kubesim/faults/close-watches")
        assert closed == {"closed": 1}
        rest = await asyncio.wait_for(resp.content.read(), timeout=5)
        assert rest == b""
    assert kubesim.faults.close_watches() == 0


async def test_compaction_expires_old_resource_versions(kubesim: Any, api: Api) -> None:
    old_rv = (await api.ok("GET", CMS))["metadata"]["resourceVersion"]
    await api.ok("POST", CMS, configmap("after"))
    await api.ok("POST", "/kubesim/faults/compact")
    async with api.session.get(f"{kubesim.url}{CMS}?watch=true&resourceVersion={old_rv}") as resp:
        assert resp.status == 200
        lines = [orjson.loads(line) async for line in resp.content if line.strip()]
    assert len(lines) == 1 and lines[0]["type"] == "ERROR"
    assert_status(lines[0]["object"], 410, "Expired")
    listed = await api.ok("GET", CMS)  # the client's way back: relist
    assert [i["metadata"]["name"] for i in listed["items"]] == ["after"]
    # from Python too, and a list continuing from the old snapshot is expired as well
    kubesim.faults.compact()
    status, payload, _ = await api.call("GET", f"{CMS}?resourceVersion={old_rv}&resourceVersionMatch=Exact")
    assert status == 410
    assert_status(payload, 410, "Expired")


async def test_watch_resumes_across_closed_watches_without_gaps_or_duplicates(
    kubesim: Any, api: Api, session: aiohttp.ClientSession
) -> None:
    start_rv = (await api.ok("GET", CMS))["metadata"]["resourceVersion"]
    received: list[tuple[str, str, str]] = []

    def read_at_least(count: int) -> Callable[[], bool]:
        return lambda: len(received) >= count

    connections = 0
    total = 30

    async def watcher() -> None:
        nonlocal connections
        rv = start_rv
        while len(received) < total:
            connections += 1
            url = f"{kubesim.url}{CMS}?watch=true&allowWatchBookmarks=true&resourceVersion={rv}"
            async with session.get(url) as resp:
                assert resp.status == 200
                async for line in resp.content:
                    event = orjson.loads(line)
                    rv = event["object"]["metadata"]["resourceVersion"]
                    if event["type"] == "BOOKMARK":
                        continue
                    assert event["type"] != "ERROR", event
                    received.append((event["type"], event["object"]["metadata"]["name"], rv))
                    if len(received) == total:
                        return

    task = asyncio.create_task(watcher())
    expected: list[tuple[str, str, str]] = []
    for batch in range(3):
        await wait_for(lambda: kubesim.watches.open_count == 1, message="watcher connected")
        for i in range(5):
            name = f"cm-{batch}-{i}"
            created = await api.ok("POST", CMS, configmap(name))
            expected.append(("ADDED", name, created["metadata"]["resourceVersion"]))
            updated = await api.ok("PUT", f"{CMS}/{name}", {**created, "data": {"k": "2"}})
            expected.append(("MODIFIED", name, updated["metadata"]["resourceVersion"]))
        if batch < 2:
            # let the watcher read part of the batch, then cut every stream under it
            await wait_for(read_at_least(10 * batch + 3), message="some events read")
            if batch == 0:
                assert kubesim.faults.close_watches() == 1
            else:
                assert await api.ok("POST", "/kubesim/faults/close-watches") == {"closed": 1}
    await asyncio.wait_for(task, timeout=15)
    assert received == expected
    assert connections == 3
