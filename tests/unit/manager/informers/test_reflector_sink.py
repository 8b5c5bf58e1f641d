"""What the reflector hands the informer (replace / apply) and what handlers then see — no network involved.

The informer is driven exactly as the reflector drives it; handlers run on their own tasks.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from manager.apimachinery.resources import PODS
from manager.client.config import RestConfig
from manager.client.rest import ApiClient
from manager.informers import SharedInformer
from manager.informers.reflector import Reflector
from tests.helpers import wait_for
from tests.unit.manager.informers.harness import Recorder, pod, watch_stream


async def test_initial_list_relist_with_tombstones(informer: SharedInformer) -> None:
    rec = Recorder()
    reg = informer.add_event_handler(rec)
    reg.start()
    await informer.replace([pod("a"), pod("b")], "10")
    assert informer.has_synced()
    await wait_for(reg.has_synced)
    assert rec.events == [("add", "a", True), ("add", "b", True)]
    assert "managedFields" not in informer.indexer.get_by_key("default/a")["metadata"]  # type: ignore[index]

    informer.apply("MODIFIED", pod("a", "11"))
    informer.apply("ADDED", pod("c", "12"))
    # relist after a disconnect: b vanished, a changed, d appeared
    await informer.replace([pod("a", "13"), pod("c", "12"), pod("d", "14")], "14")
    await wait_for(lambda: len(rec.events) == 8)
    assert rec.events[2:] == [
        ("update", "a", "1", "11"),
        ("add", "c", False),
        ("update", "a", "11", "13"),
        ("update", "c", "12", "12"),
        ("add", "d", False),
        ("tombstone", "default/b", "1"),
    ]
    assert sorted(informer.indexer.list_keys()) == ["default/a", "default/c", "default/d"]


async def test_watch_events_and_deletes(informer: SharedInformer) -> None:
    rec = Recorder()
    informer.add_event_handler(rec).start()
    await informer.replace([], "1")
    informer.apply("ADDED", pod("a", "2"))
    informer.apply("ADDED", pod("a", "3"))  # a repeated ADDED is an update of the cached object
    informer.apply("DELETED", pod("a", "4"))
    await wait_for(lambda: len(rec.events) == 3)
    assert rec.events == [("add", "a", False), ("update", "a", "2", "3"), ("delete", "a")]
    assert len(informer.indexer) == 0


async def test_late_handler_gets_the_cache_as_initial_adds(informer: SharedInformer) -> None:
    early = Recorder()
    informer.add_event_handler(early).start()
    await informer.replace([pod("a"), pod("b")], "5")
    informer.apply("ADDED", pod("c", "6"))
    late = Recorder()
    reg = informer.add_event_handler(late)
    assert not reg.has_synced()
    reg.start()
    await wait_for(reg.has_synced)
    informer.apply("MODIFIED", pod("c", "7"))
    await wait_for(lambda: len(late.events) == 4)
    assert sorted(late.events[:3]) == [("add", "a", True), ("add", "b", True), ("add", "c", True)]
    assert late.events[3] == ("update", "c", "6", "7")


async def test_slow_handler_does_not_delay_another(informer: SharedInformer) -> None:
    gate = asyncio.Event()
    slow_seen: list[str] = []

    async def slow_add(obj: dict[str, Any], initial: bool) -> None:
        await gate.wait()
        slow_seen.append(obj["metadata"]["name"])

    from manager.informers import EventHandlerFuncs

    slow = informer.add_event_handler(EventHandlerFuncs(add=slow_add))
    fast_rec = Recorder()
    fast = informer.add_event_handler(fast_rec)
    slow.start()
    fast.start()
    await informer.replace([pod(f"p{i}") for i in range(100)], "1")
    for i in range(100, 1100):
        informer.apply("ADDED", pod(f"p{i}", str(i)))
    await wait_for(lambda: len(fast_rec.events) == 1100, timeout=5)
    assert fast.has_synced() and not slow.has_synced()
    assert slow_seen == [] and len(slow.buffer) > 1000
    gate.set()
    await wait_for(lambda: len(slow_seen) == 1100, timeout=5)
    assert slow_seen[:3] == ["p0", "p1", "p2"]


async def test_bad_objects_and_failing_handlers_are_counted_not_fatal(informer: SharedInformer) -> None:
    calls: list[str] = []

    class Flaky(Recorder):
        def on_add(self, obj: dict[str, Any], is_in_initial_list: bool) -> None:
            calls.append(obj["metadata"]["name"])
            if obj["metadata"]["name"] == "boom":
                raise RuntimeError("handler bug")

    informer.add_event_handler(Flaky()).start()
    await informer.replace([pod("a"), {"kind": "Pod"}, {"metadata": {"name": 7}}, pod("boom")], "1")
    informer.apply("ADDED", {"metadata": "nonsense"})
    informer.apply("ADDED", pod("b", "2"))
    await wait_for(lambda: calls == ["a", "boom", "b"])
    assert informer.decode_errors == 3
    assert informer.handler_errors == 1
    assert sorted(informer.indexer.list_keys()) == ["default/a", "default/b", "default/boom"]


async def test_resync_replays_the_cache_as_updates(informer: SharedInformer) -> None:
    rec = Recorder()
    informer.add_event_handler(rec).start()
    await informer.replace([pod("a", "3")], "3")
    informer.resync()
    await wait_for(lambda: len(rec.events) == 2)
    assert rec.events[1] == ("update", "a", "3", "3")


async def test_periodic_resync_per_handler(informer: SharedInformer) -> None:
    rec = Recorder()
    reg = informer.add_event_handler(rec, resync_period=1.0)
    reg.start()
    await informer.replace([pod("a", "3")], "3")
    await wait_for(lambda: ("update", "a", "3", "3") in rec.events, timeout=5)
    await reg.stop()


async def test_metadata_only_informer_projects_objects() -> None:
    client = ApiClient(RestConfig(host="http://127.0.0.1:1"))
    informer = SharedInformer(client, PODS, metadata_only=True)
    await informer.replace([pod("a")], "1")
    cached = informer.indexer.get_by_key("default/a")
    assert cached is not None
    assert cached["kind"] == "PartialObjectMetadata" and set(cached) == {"apiVersion", "kind", "metadata"}
    assert "managedFields" not in cached["metadata"]


async def test_health_reports_unsynced_and_failing(informer: SharedInformer) -> None:
    now = [100.0]
    informer._clock = lambda: now[0]
    informer.reflector._clock = lambda: now[0]
    assert "not synced" in (informer.health() or "")
    await informer.replace([], "1")
    informer.reflector._record_success()
    assert informer.health() is None
    informer.reflector._record_error(ConnectionError("refused"))
    assert informer.health() is None  # within the grace period
    now[0] += informer.failure_grace + 1
    assert "failing" in (informer.health() or "")
    informer.reflector._record_success()
    now[0] += informer.stale_after + 1
    assert "no event" in (informer.health() or "")


def test_list_paging_rules() -> None:
    reflector = Reflector(ApiClient(RestConfig(host="http://127.0.0.1:1")), PODS, sink=None)  # type: ignore[arg-type]
    assert reflector._relist_resource_version() == "0"
    assert reflector.pager.page_limit("0") == 500
    reflector.last_sync_resource_version = "42"
    assert reflector._relist_resource_version() == "42"
    assert reflector.pager.page_limit("42") is None  # served from the watch cache, unpaged
    reflector._last_sync_unavailable = True
    assert reflector._relist_resource_version() == ""
    assert reflector.pager.page_limit("") == 500  # consistent read from etcd: paged
    reflector.pager.paginated_result = True
    assert reflector.pager.page_limit("42") == 500
    reflector.pager.page_size = 50
    assert reflector.pager.page_limit("42") == 50


async def test_handler_added_while_a_list_is_applied_sees_each_object_once(informer: SharedInformer) -> None:
    items = [pod(f"p{i}") for i in range(2500)]  # three chunks: the replace yields to the loop twice
    task = asyncio.create_task(informer.replace(items, "1"))
    await asyncio.sleep(0)  # the replace applied its first chunk and yielded
    assert 0 < len(informer.indexer) < 2500 and not informer.has_synced()
    rec = Recorder()
    reg = informer.add_event_handler(rec)
    reg.start()
    await task
    await wait_for(reg.has_synced)
    names = [name for _, name, _ in rec.events]
    assert sorted(names) == sorted(f"p{i}" for i in range(2500))
    assert all(kind == "add" and initial for kind, _, initial in rec.events)


@pytest.mark.parametrize("read_size", [1, 7, 64, 100_000])
async def test_watch_bytes_framing_bad_lines_and_bookmarks(informer: SharedInformer, read_size: int) -> None:
    import orjson

    from manager.client import Expired

    lines = [
        orjson.dumps({"type": "ADDED", "object": pod("a", "5")}),
        b"",
        b"{not json",
        orjson.dumps({"type": "ADDED", "object": {"kind": "Pod"}}),  # no metadata
        orjson.dumps({"type": "MODIFIED", "object": pod("a", "6")}),
        orjson.dumps({"type": "BOOKMARK", "object": {"kind": "Pod", "metadata": {"resourceVersion": "9"}}}),
        orjson.dumps({"type": "ADDED", "object": pod("b", "10")}),
    ]
    await informer.replace([], "1")
    await informer.reflector._consume(watch_stream(b"\n".join(lines) + b"\n", read_size))
    assert sorted(informer.indexer.list_keys()) == ["default/a", "default/b"]
    assert informer.indexer.get("default", "a")["metadata"]["resourceVersion"] == "6"  # type: ignore[index]
    assert informer.decode_errors == 2
    assert informer.last_sync_resource_version == "10"

    expired = {
        "type": "ERROR",
        "object": {"kind": "Status", "code": 410, "reason": "Expired", "message": "old"},
    }
    with pytest.raises(Expired):
        await informer.reflector._consume(watch_stream(orjson.dumps(expired) + b"\n", read_size))


async def test_a_dropped_informer_is_freed_even_after_a_freeze() -> None:
    import gc
    import weakref

    from manager.informers import EventHandlerFuncs

    client = ApiClient(RestConfig(host="http://127.0.0.1:1"))
    dropped = SharedInformer(client, PODS, name="dropped-informer")
    dropped.add_event_handler(EventHandlerFuncs(add=lambda obj, initial: None))
    await dropped.replace([pod("a")], "1")  # freezes the heap, informer included
    assert gc.get_freeze_count() > 0
    ref = weakref.ref(dropped)
    del dropped
    assert ref() is None  # no reference cycle: reference counting alone frees it


@pytest.mark.parametrize("read_size", [5, 7, 13, 50, 333])
async def test_streaming_list_hands_over_the_same_stream_without_losing_bytes(
    informer: SharedInformer, read_size: int
) -> None:
    import orjson

    end = {
        "kind": "Pod",
        "metadata": {"resourceVersion": "7", "annotations": {"k8s.io/initial-events-end": "true"}},
    }
    lines = [
        orjson.dumps({"type": "ADDED", "object": pod("a", "5")}),
        orjson.dumps({"type": "BOOKMARK", "object": end}),
        orjson.dumps({"type": "MODIFIED", "object": pod("a", "8")}),
        orjson.dumps({"type": "ADDED", "object": pod("b", "9")}),
    ]
    stream = watch_stream(b"\n".join(lines) + b"\n", read_size)
    await informer.reflector._initial_events(stream)
    assert informer.has_synced() and informer.last_sync_resource_version == "7"
    await informer.reflector._consume(stream)
    assert informer.decode_errors == 0
    assert informer.indexer.get("default", "a")["metadata"]["resourceVersion"] == "8"  # type: ignore[index]
    assert informer.indexer.get("default", "b") is not None


async def test_one_read_is_one_batch_shared_by_every_handler(informer: SharedInformer) -> None:
    """The events of one network read reach each handler as one shared batch, in order, after the cache."""
    first, second = Recorder(), Recorder()
    reg_a, reg_b = informer.add_event_handler(first), informer.add_event_handler(second)
    await informer.replace([pod("a")], "1")
    informer.apply_events([("MODIFIED", pod("a", "2")), ("ADDED", pod("b", "3")), ("DELETED", pod("a", "4"))])
    assert informer.indexer.list_keys() == ["default/b"]
    assert len(reg_a.buffer) == 3 and reg_a.buffer[2] is reg_b.buffer[2]  # list, synced mark, the read
    reg_a.start()
    reg_b.start()
    expected = [("add", "a", True), ("update", "a", "1", "2"), ("add", "b", False), ("delete", "a")]
    await wait_for(lambda: first.events == expected and second.events == expected, timeout=5)
    assert not reg_a.buffer and not reg_b.buffer


async def test_watch_error_after_events_applies_them_first() -> None:
    """An ERROR line in the middle of a read: the events before it are applied, then the watch ends."""
    from manager.client.errors import Expired

    lines = [
        orjson.dumps({"type": "ADDED", "object": pod("a", "5")}),
        orjson.dumps({"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired"}}),
        orjson.dumps({"type": "ADDED", "object": pod("b", "6")}),
    ]

    class OneRead:
        async def spans(self) -> Any:
            yield [(line, 0, len(line)) for line in lines]

    client = ApiClient(RestConfig(host="http://127.0.0.1:1"))
    informer = SharedInformer(client, PODS)
    with pytest.raises(Expired):
        await informer.reflector._consume_events(OneRead())  # type: ignore[arg-type]
    assert informer.indexer.list_keys() == ["default/a"]
    assert informer.reflector.last_sync_resource_version == "5"


def _bookmark(rv: str | None) -> dict[str, Any]:
    meta = {} if rv is None else {"resourceVersion": rv}
    return {"type": "BOOKMARK", "object": {"kind": "Pod", "apiVersion": "v1", "metadata": meta}}


@pytest.mark.parametrize(
    ("events", "expected"),
    [
        ([("MODIFIED", pod("a", "5")), ("BOOKMARK", "7"), ("MODIFIED", pod("a", ""))], "7"),
        ([("BOOKMARK", "7"), ("MODIFIED", pod("a", "8"))], "8"),
        ([("MODIFIED", pod("a", "5")), ("BOOKMARK", None)], "5"),
        ([("MODIFIED", pod("a", "5")), ("MODIFIED", pod("b", "")), ("BOOKMARK", "")], "5"),
        ([("BOOKMARK", "3"), ("ADDED", pod("a", "4")), ("BOOKMARK", "6"), ("ADDED", pod("b", ""))], "6"),
        ([("BOOKMARK", None)], "0"),
    ],
)
async def test_a_read_ends_at_its_last_non_empty_resource_version(events: list[Any], expected: str) -> None:
    """The RV kept after a read is the last non-empty one of its events and bookmarks, in stream order."""
    lines = [
        orjson.dumps(_bookmark(value) if kind == "BOOKMARK" else {"type": kind, "object": value})
        for kind, value in events
    ]

    class OneRead:
        async def spans(self) -> Any:
            yield [(line, 0, len(line)) for line in lines]

    informer = SharedInformer(ApiClient(RestConfig(host="http://127.0.0.1:1")), PODS)
    informer.reflector.last_sync_resource_version = "0"
    await informer.reflector._consume_events(OneRead())  # type: ignore[arg-type]
    assert informer.reflector.last_sync_resource_version == expected
    assert informer.reflector.received == len(events)


@pytest.mark.parametrize("owner_index", [False, True])
async def test_watch_events_keep_the_cache_and_its_indices(owner_index: bool) -> None:
    """Updates replace the cached object (handlers get old and new) with or without custom indexers; a
    changed owner moves the key in the owner index; new keys enter the namespace index."""
    from manager.informers.store import CONTROLLER_UID_INDEX, IndexFunc, controller_uid_index

    def owned(name: str, rv: str, uid: str) -> dict[str, Any]:
        obj = pod(name, rv)
        obj["metadata"]["ownerReferences"] = [{"uid": uid, "controller": True}]
        return obj

    indexers: dict[str, IndexFunc] | None = (
        {CONTROLLER_UID_INDEX: controller_uid_index} if owner_index else None
    )
    informer = SharedInformer(ApiClient(RestConfig(host="http://127.0.0.1:1")), PODS, indexers=indexers)
    await informer.replace([owned("a", "1", "u1")], "1")
    reg = informer.add_event_handler(rec := Recorder())
    first = informer.indexer.get("default", "a")
    informer.apply_events([("MODIFIED", owned("a", "2", "u2")), ("ADDED", pod("b", "3", ns="other"))])
    reg.start()
    expected = [("add", "a", True), ("update", "a", "1", "2"), ("add", "b", False)]
    await wait_for(lambda: rec.events[:3] == expected, timeout=5)
    assert first is not None and first["metadata"]["resourceVersion"] == "1"
    assert informer.indexer.get("default", "a")["metadata"]["resourceVersion"] == "2"  # type: ignore[index]
    assert informer.indexer.index_keys("namespace", "default") == ["default/a"]
    assert informer.indexer.index_keys("namespace", "other") == ["other/b"]
    if owner_index:
        assert informer.indexer.index_keys(CONTROLLER_UID_INDEX, "u1") == []
        assert informer.indexer.index_keys(CONTROLLER_UID_INDEX, "u2") == ["default/a"]
    await reg.stop()
