"""LIST and WATCH over raw HTTP: resourceVersion rules, pagination and 410, selectors, watch resume, 410
ERROR events, bookmarks, timeouts, selector transitions, streaming lists, Table watches."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
import pytest

from kubesim import KubeSim
from kubesim.pytest_plugin import KubeSimFactory

Obj = dict[str, Any]
CMS = "/api/v1/namespaces/default/configmaps"
JSON_CT = {"Content-Type": "application/json"}


@pytest.fixture
async def sim(kubesim_factory: KubeSimFactory) -> KubeSim:
    return await kubesim_factory(kubelet=False, history_size=50, bookmark_interval=0.2)


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as s:
        yield s


async def call(
    session: aiohttp.ClientSession,
    sim: KubeSim,
    method: str,
    path: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, Any]:
    data = None if body is None else orjson.dumps(body)
    async with session.request(
        method, sim.url + path, data=data, headers={**JSON_CT, **(headers or {})}
    ) as resp:
        raw = await resp.read()
        return resp.status, orjson.loads(raw) if raw else None


async def ok(session: aiohttp.ClientSession, sim: KubeSim, method: str, path: str, body: Any = None) -> Any:
    status, payload = await call(session, sim, method, path, body)
    assert status < 300, (status, payload)
    return payload


def cm(name: str, labels: dict[str, str] | None = None, value: str = "v") -> Obj:
    return {"metadata": {"name": name, "labels": labels or {}}, "data": {"k": value}}


class Watch:
    """Reads watch lines as they arrive."""

    def __init__(self, resp: aiohttp.ClientResponse) -> None:
        self.resp = resp

    async def next(self, timeout: float = 5.0) -> Obj | None:
        line = await asyncio.wait_for(self.resp.content.readline(), timeout)
        return orjson.loads(line) if line else None

    async def events(self, count: int) -> list[Obj]:
        result: list[Obj] = []
        for _ in range(count):
            event = await self.next()
            assert event is not None, f"stream ended after {result}"
            result.append(event)
        return result


async def open_watch(
    session: aiohttp.ClientSession,
    sim: KubeSim,
    query: str,
    path: str = CMS,
    headers: dict[str, str] | None = None,
) -> tuple[aiohttp.ClientResponse, Watch]:
    resp = await session.get(f"{sim.url}{path}?{query}", headers=headers)
    return resp, Watch(resp)


async def test_list_shape_and_resource_version(session: aiohttp.ClientSession, sim: KubeSim) -> None:
    await ok(session, sim, "POST", CMS, cm("a"))
    listed = await ok(session, sim, "GET", CMS)
    assert listed["kind"] == "ConfigMapList" and listed["apiVersion"] == "v1"
    assert listed["metadata"]["resourceVersion"] == str(sim.store.resource_version)
    empty = await ok(session, sim, "GET", "/api/v1/namespaces/kube-public/configmaps")
    assert empty["items"] == []


async def test_pagination_is_a_consistent_snapshot(session: aiohttp.ClientSession, sim: KubeSim) -> None:
    for i in range(5):
        await ok(session, sim, "POST", CMS, cm(f"c{i}"))
    page1 = await ok(session, sim, "GET", f"{CMS}?limit=2")
    assert [i["metadata"]["name"] for i in page1["items"]] == ["c0", "c1"]
    assert page1["metadata"]["remainingItemCount"] == 3
    await ok(session, sim, "DELETE", f"{CMS}/c3")  # not visible in the snapshot
    await ok(session, sim, "POST", CMS, cm("c5"))
    token = page1["metadata"]["continue"]
    page2 = await ok(session, sim, "GET", f"{CMS}?limit=2&continue={token}")
    assert [i["metadata"]["name"] for i in page2["items"]] == ["c2", "c3"]
    page3 = await ok(session, sim, "GET", f"{CMS}?limit=2&continue={page2['metadata']['continue']}")
    assert [i["metadata"]["name"] for i in page3["items"]] == ["c4"]
    assert "continue" not in page3["metadata"] and "remainingItemCount" not in page3["metadata"]
    assert (
        page1["metadata"]["resourceVersion"]
        == page2["metadata"]["resourceVersion"]
        == page3["metadata"]["resourceVersion"]
    )


async def test_expired_continue_token_is_410(session: aiohttp.ClientSession, sim: KubeSim) -> None:
    for i in range(3):
        await ok(session, sim, "POST", CMS, cm(f"c{i}"))
    page1 = await ok(session, sim, "GET", f"{CMS}?limit=1")
    await ok(session, sim, "POST", CMS, cm("later"))
    sim.store.compact()
    status, payload = await call(
        session, sim, "GET", f"{CMS}?limit=1&continue={page1['metadata']['continue']}"
    )
    assert status == 410 and payload["reason"] == "Expired"
    assert payload["message"].startswith("The provided continue parameter is too old")
    status, payload = await call(session, sim, "GET", f"{CMS}?limit=1&continue=garbage")
    assert status == 400


async def test_exact_list_from_history_and_410_below_the_floor(
    session: aiohttp.ClientSession, sim: KubeSim
) -> None:
    await ok(session, sim, "POST", CMS, cm("a", value="1"))
    rv = sim.store.resource_version
    await ok(session, sim, "PUT", f"{CMS}/a", cm("a", value="2"))
    await ok(session, sim, "POST", CMS, cm("b"))
    old = await ok(session, sim, "GET", f"{CMS}?resourceVersion={rv}&resourceVersionMatch=Exact")
    assert [(i["metadata"]["name"], i["data"]["k"]) for i in old["items"]] == [("a", "1")]
    assert old["metadata"]["resourceVersion"] == str(rv)
    old = await ok(session, sim, "GET", f"{CMS}?resourceVersion={rv}&limit=10")  # limit + RV means Exact
    assert len(old["items"]) == 1
    newest = await ok(session, sim, "GET", f"{CMS}?resourceVersion={rv}&resourceVersionMatch=NotOlderThan")
    assert len(newest["items"]) == 2
    sim.store.compact()
    status, payload = await call(
        session, sim, "GET", f"{CMS}?resourceVersion={rv}&resourceVersionMatch=Exact"
    )
    assert status == 410 and payload["message"] == "The resourceVersion for the provided list is too old."


@pytest.mark.parametrize(
    ("query", "code"),
    [
        ("resourceVersionMatch=Exact", 422),
        ("resourceVersionMatch=Exact&resourceVersion=0", 422),
        ("resourceVersionMatch=Bogus&resourceVersion=1", 422),
        ("resourceVersionMatch=NotOlderThan&resourceVersion=1&continue=x", 422),
        ("sendInitialEvents=true", 422),
        ("resourceVersion=5&continue=abc", 400),
        ("labelSelector=app%3D(", 400),
        ("fieldSelector=spec.foo%3Dbar", 400),
        ("fieldSelector=metadata.name", 400),
        ("resourceVersion=abc", 400),
        ("limit=abc", 400),
        ("resourceVersion=999999", 504),
    ],
)
async def test_list_option_errors(
    session: aiohttp.ClientSession, sim: KubeSim, query: str, code: int
) -> None:
    sim.api.too_new_wait = 0.05  # a too new resourceVersion is waited for before the 504
    status, payload = await call(session, sim, "GET", f"{CMS}?{query}")
    assert status == code and payload["kind"] == "Status" and payload["code"] == code, payload
    if code == 422:
        assert payload["message"].startswith('ListOptions.meta.k8s.io "" is invalid')


async def test_selectors_on_lists(session: aiohttp.ClientSession, sim: KubeSim) -> None:
    await ok(session, sim, "POST", CMS, cm("a", {"app": "a", "tier": "web"}))
    await ok(session, sim, "POST", CMS, cm("b", {"app": "b"}))
    await ok(session, sim, "POST", CMS, cm("c"))

    async def names(query: str) -> list[str]:
        listed = await ok(session, sim, "GET", f"{CMS}?{query}")
        return [i["metadata"]["name"] for i in listed["items"]]

    assert await names("labelSelector=app%3Da") == ["a"]
    assert await names("labelSelector=app+in+%28a%2Cb%29%2C%21tier") == ["b"]  # the Python client's encoding
    assert await names("labelSelector=app%20notin%20(a)") == ["b", "c"]
    assert await names("labelSelector=app!%3Da") == ["b", "c"]
    assert await names("fieldSelector=metadata.name%3Db") == ["b"]
    assert await names("fieldSelector=metadata.name!%3Db,metadata.namespace%3Ddefault") == ["a", "c"]
    assert await names("fieldSelector=metadata.name%3Da&labelSelector=app%3Db") == []
    all_ns = await ok(session, sim, "GET", "/api/v1/configmaps?fieldSelector=metadata.namespace%3Ddefault")
    assert len(all_ns["items"]) == 3


async def test_watch_from_now_resume_and_framing(session: aiohttp.ClientSession, sim: KubeSim) -> None:
    await ok(session, sim, "POST", CMS, cm("pre"))
    resp, watch = await open_watch(session, sim, "watch=True")  # Python clients send True
    assert resp.status == 200 and resp.headers["Content-Type"] == "application/json"
    assert resp.headers.get("Transfer-Encoding") == "chunked"
    first = await watch.next()
    assert first is not None and first["type"] == "ADDED" and first["object"]["metadata"]["name"] == "pre"
    created = await ok(session, sim, "POST", CMS, cm("live"))
    await ok(session, sim, "PUT", f"{CMS}/live", cm("live", value="2"))
    await ok(session, sim, "DELETE", f"{CMS}/live")
    events = await watch.events(3)
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "DELETED"]
    rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert rvs == sorted(rvs) and rvs[-1] == sim.store.resource_version  # DELETED carries the deletion RV
    resp.close()
    # resume exactly after the creation: no synthetic ADDED, the two later events again
    resume = created["metadata"]["resourceVersion"]
    resp, watch = await open_watch(session, sim, f"watch=1&resourceVersion={resume}")
    assert [e["type"] for e in await watch.events(2)] == ["MODIFIED", "DELETED"]
    resp.close()


async def test_watch_too_old_gets_410_error_event_on_http_200(
    session: aiohttp.ClientSession, sim: KubeSim
) -> None:
    await ok(session, sim, "POST", CMS, cm("a"))
    rv = sim.store.resource_version
    await ok(session, sim, "POST", CMS, cm("b"))
    sim.store.compact()
    resp, watch = await open_watch(session, sim, f"watch=true&resourceVersion={rv - 1}")
    assert resp.status == 200
    event = await watch.next()
    assert event is not None and event["type"] == "ERROR"
    status = event["object"]
    assert (status["kind"], status["code"], status["reason"]) == ("Status", 410, "Expired")
    assert status["message"].startswith(f"too old resource version: {rv - 1} (")
    assert await watch.next() is None  # and the stream ends


async def test_history_is_bounded(session: aiohttp.ClientSession, sim: KubeSim) -> None:
    start = sim.store.resource_version
    for i in range(60):  # history_size=50
        await ok(session, sim, "POST", CMS, cm(f"h{i}"))
    resp, watch = await open_watch(session, sim, f"watch=true&resourceVersion={start}")
    event = await watch.next()
    assert event is not None and event["type"] == "ERROR" and event["object"]["code"] == 410
    resp.close()


async def test_bookmarks_periodic_and_at_timeout(session: aiohttp.ClientSession, sim: KubeSim) -> None:
    rv = sim.store.resource_version
    started = time.monotonic()
    resp, watch = await open_watch(
        session, sim, f"watch=true&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=1"
    )
    kinds = []
    while (event := await watch.next()) is not None:
        kinds.append(event["type"])
        assert event["type"] == "BOOKMARK"
        assert event["object"]["kind"] == "ConfigMap" and event["object"]["metadata"]["resourceVersion"]
    elapsed = time.monotonic() - started
    assert 0.9 <= elapsed < 3.0
    assert len(kinds) >= 2  # some periodic (interval 0.2 s) and one at the timeout
    resp.close()


async def test_timeout_without_bookmarks_closes_cleanly(session: aiohttp.ClientSession, sim: KubeSim) -> None:
    rv = sim.store.resource_version
    resp, watch = await open_watch(session, sim, f"watch=true&resourceVersion={rv}&timeoutSeconds=1")
    assert await watch.next(timeout=3) is None
    resp.close()


async def test_label_filtered_watch_transitions(session: aiohttp.ClientSession, sim: KubeSim) -> None:
    await ok(session, sim, "POST", CMS, cm("x", {"app": "other"}))
    rv = sim.store.resource_version
    resp, watch = await open_watch(session, sim, f"watch=true&resourceVersion={rv}&labelSelector=app%3Dweb")
    await ok(session, sim, "PUT", f"{CMS}/x", cm("x", {"app": "web"}))  # starts matching
    await ok(session, sim, "PUT", f"{CMS}/x", cm("x", {"app": "web"}, value="2"))
    await ok(session, sim, "PUT", f"{CMS}/x", cm("x", {"app": "gone"}, value="3"))  # stops matching
    events = await watch.events(3)
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "DELETED"]
    deleted = events[2]["object"]
    assert deleted["metadata"]["labels"] == {"app": "web"}  # the previous content...
    assert deleted["metadata"]["resourceVersion"] == str(sim.store.resource_version)  # ...at the new RV
    resp.close()


async def test_field_selector_watch_for_one_name(session: aiohttp.ClientSession, sim: KubeSim) -> None:
    rv = sim.store.resource_version
    resp, watch = await open_watch(
        session, sim, f"watch=true&resourceVersion={rv}&fieldSelector=metadata.name%3Db"
    )
    await ok(session, sim, "POST", CMS, cm("a"))
    await ok(session, sim, "POST", CMS, cm("b"))
    event = await watch.next()
    assert event is not None and event["object"]["metadata"]["name"] == "b"
    resp.close()


async def test_streaming_list_sends_initial_events_then_the_end_bookmark(
    session: aiohttp.ClientSession, sim: KubeSim
) -> None:
    await ok(session, sim, "POST", CMS, cm("one"))
    await ok(session, sim, "POST", CMS, cm("two"))
    rv_at_request = sim.store.resource_version
    query = "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
    resp, watch = await open_watch(session, sim, query)
    events = await watch.events(3)
    assert [e["type"] for e in events] == ["ADDED", "ADDED", "BOOKMARK"]
    bookmark = events[2]["object"]
    assert bookmark["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    assert int(bookmark["metadata"]["resourceVersion"]) >= rv_at_request
    await ok(session, sim, "POST", CMS, cm("three"))
    event = await watch.next()
    assert event is not None and event["type"] == "ADDED" and event["object"]["metadata"]["name"] == "three"
    resp.close()


@pytest.mark.parametrize(
    "query",
    [
        "watch=true&sendInitialEvents=true",
        "watch=true&sendInitialEvents=true&resourceVersionMatch=Exact",
        "watch=true&resourceVersionMatch=NotOlderThan",
    ],
)
async def test_streaming_list_validation(session: aiohttp.ClientSession, sim: KubeSim, query: str) -> None:
    status, payload = await call(session, sim, "GET", f"{CMS}?{query}")
    assert status == 422 and payload["reason"] == "Invalid"


async def test_close_all_watches_ends_streams(session: aiohttp.ClientSession, sim: KubeSim) -> None:
    rv = sim.store.resource_version
    streams = [await open_watch(session, sim, f"watch=true&resourceVersion={rv}") for _ in range(3)]
    await ok(session, sim, "POST", CMS, cm("seen"))
    for _, watch in streams:
        assert (await watch.next()) is not None
    assert sim.watches.close_all_watches() == 3
    for resp, watch in streams:
        assert await watch.next() is None
        resp.close()


async def test_table_watch_has_headers_only_first(session: aiohttp.ClientSession, sim: KubeSim) -> None:
    rv = sim.store.resource_version
    accept = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"}
    resp, watch = await open_watch(session, sim, f"watch=true&resourceVersion={rv}", headers=accept)
    await ok(session, sim, "POST", CMS, cm("t1"))
    await ok(session, sim, "POST", CMS, cm("t2"))
    first, second = await watch.events(2)
    assert first["object"]["kind"] == "Table" and first["object"]["columnDefinitions"]
    assert not second["object"].get("columnDefinitions")
    assert second["object"]["rows"][0]["cells"][0] == "t2"
    resp.close()


async def test_in_process_store_subscription(sim: KubeSim) -> None:
    seen: list[str] = []
    sub = sim.store.subscribe("configmaps", lambda e: seen.append(f"{e.type}:{e.obj['metadata']['name']}"))
    sim.store.create("configmaps", {"metadata": {"name": "direct", "namespace": "default"}})
    obj = sim.store.get("configmaps", "default", "direct")
    assert obj is not None
    obj["data"] = {"a": "b"}
    sim.store.update("configmaps", obj)
    sim.store.update("configmaps", sim.store.get("configmaps", "default", "direct") or {})  # no-op
    sim.store.delete("configmaps", "default", "direct")
    sub.close()
    assert seen == ["ADDED:direct", "MODIFIED:direct", "DELETED:direct"]


async def test_writes_from_a_subscriber_are_delivered_in_revision_order(sim: KubeSim) -> None:
    def echo(event: Any) -> None:
        if event.type == "ADDED" and event.obj["metadata"]["name"] == "first":
            sim.store.create("configmaps", {"metadata": {"name": "second", "namespace": "default"}})

    first_sub = sim.store.subscribe("configmaps", echo)
    seen: list[int] = []
    second_sub = sim.store.subscribe("configmaps", lambda e: seen.append(e.rv))
    sim.store.create("configmaps", {"metadata": {"name": "first", "namespace": "default"}})
    first_sub.close()
    second_sub.close()
    assert seen == sorted(seen) and len(seen) == 2


async def test_metadata_only_watch_and_bookmarks(session: aiohttp.ClientSession, sim: KubeSim) -> None:
    rv = sim.store.resource_version
    accept = {"Accept": "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io,application/json"}
    query = f"watch=true&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=1"
    resp, watch = await open_watch(session, sim, query, headers=accept)
    await ok(session, sim, "POST", CMS, cm("meta", {"x": "y"}))
    event = await watch.next()
    assert event is not None and event["type"] == "ADDED"
    assert event["object"]["kind"] == "PartialObjectMetadata" and "data" not in event["object"]
    assert event["object"]["metadata"]["labels"] == {"x": "y"}
    bookmark = await watch.next()
    assert bookmark is not None and bookmark["type"] == "BOOKMARK"
    assert bookmark["object"]["kind"] == "PartialObjectMetadata"
    resp.close()


async def test_events_v1_watch_shows_the_new_api_view(session: aiohttp.ClientSession, sim: KubeSim) -> None:
    rv = sim.store.resource_version
    path = "/apis/events.k8s.io/v1/namespaces/default/events"
    resp, watch = await open_watch(session, sim, f"watch=true&resourceVersion={rv}", path=path)
    core = {
        "metadata": {"name": "e"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
        "reason": "R",
        "message": "hello",
        "type": "Normal",
    }
    await ok(session, sim, "POST", "/api/v1/namespaces/default/events", core)
    event = await watch.next()
    assert event is not None and event["object"]["apiVersion"] == "events.k8s.io/v1"
    assert event["object"]["note"] == "hello" and event["object"]["regarding"]["name"] == "p"
    resp.close()


async def test_watch_across_all_namespaces(session: aiohttp.ClientSession, sim: KubeSim) -> None:
    rv = sim.store.resource_version
    resp, watch = await open_watch(
        session, sim, f"watch=true&resourceVersion={rv}", path="/api/v1/configmaps"
    )
    await ok(session, sim, "POST", "/api/v1/namespaces/kube-system/configmaps", cm("a"))
    await ok(session, sim, "POST", CMS, cm("b"))
    events = await watch.events(2)
    assert [(e["object"]["metadata"]["namespace"], e["object"]["metadata"]["name"]) for e in events] == [
        ("kube-system", "a"),
        ("default", "b"),
    ]
    resp.close()


@pytest.mark.parametrize(
    ("query", "code"),
    [
        ("watch=true&timeoutSeconds=x", 400),
        ("watch=true&resourceVersion=abc", 400),
        ("watch=true&labelSelector=%28", 400),
        ("watch=true&fieldSelector=nope%3D1", 400),
        ("watch=true&allowWatchBookmarks=maybe", 400),
        ("watch=true&sendInitialEvents=maybe&resourceVersionMatch=NotOlderThan", 400),
        ("watch=maybe", 400),
    ],
)
async def test_bad_watch_requests_fail_before_streaming(
    session: aiohttp.ClientSession, sim: KubeSim, query: str, code: int
) -> None:
    status, payload = await call(session, sim, "GET", f"{CMS}?{query}")
    assert status == code and payload["kind"] == "Status" and payload["code"] == code
    assert sim.watches.open_count == 0
