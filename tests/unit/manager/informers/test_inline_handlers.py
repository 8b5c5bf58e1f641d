"""Inline handlers: called as each event is applied once their task is idle, in order, errors contained;
the reflector then applies events one by one and still records the right resourceVersion."""

from __future__ import annotations

import gc
import warnings
from typing import Any

import orjson
import pytest

from manager.informers import EventHandlerFuncs, SharedInformer
from tests.helpers import wait_for
from tests.unit.manager.informers.harness import Recorder, pod, watch_stream


async def test_an_idle_inline_handler_is_called_during_apply(informer: SharedInformer) -> None:
    rec = Recorder()
    reg = informer.add_event_handler(rec, inline=True)
    reg.start()
    await informer.replace([pod("a")], "1")
    await wait_for(reg.can_call_now)  # the initial list went through the buffer; the task is parked
    assert informer.dispatches_inline()
    informer.apply_events([("MODIFIED", pod("a", "2")), ("ADDED", pod("b", "3"))])
    informer.apply_one("DELETED", pod("a", "4"))
    # no await in between: the handler was called synchronously, in order
    assert rec.events == [("add", "a", True), ("update", "a", "1", "2"), ("add", "b", False), ("delete", "a")]
    assert not reg.buffer


async def test_buffered_and_inline_handlers_side_by_side(
    informer: SharedInformer,
) -> None:
    inline, buffered = Recorder(), Recorder()
    reg_inline = informer.add_event_handler(inline, inline=True)
    reg_buffered = informer.add_event_handler(buffered)
    reg_inline.start()
    reg_buffered.start()
    await informer.replace([pod("a")], "1")
    await wait_for(lambda: reg_inline.can_call_now() and reg_buffered.has_synced())
    assert not informer.dispatches_inline()  # one handler is buffered: the reflector applies per read
    informer.apply_events([("MODIFIED", pod("a", "2"))])
    assert inline.events[-1] == ("update", "a", "1", "2") and len(buffered.events) == 1
    await wait_for(lambda: len(buffered.events) == 2)
    assert buffered.events == inline.events


async def test_a_late_inline_handler_gets_the_replay_first(informer: SharedInformer) -> None:
    await informer.replace([pod("a"), pod("b")], "1")
    late = Recorder()
    reg = informer.add_event_handler(late, inline=True)  # replay of the cache goes to its buffer
    assert not reg.can_call_now()
    informer.apply_events([("MODIFIED", pod("a", "2"))])  # not idle yet: buffered behind the replay
    reg.start()
    await wait_for(reg.can_call_now)
    informer.apply_events([("MODIFIED", pod("b", "3"))])  # now idle: at once
    assert late.events == [
        ("add", "a", True),  # the replay counts as the initial list, as client-go's does
        ("add", "b", True),
        ("update", "a", "1", "2"),
        ("update", "b", "1", "3"),
    ]


async def test_inline_errors_are_counted_and_contained(informer: SharedInformer) -> None:
    seen: list[str] = []

    def boom(old: Any, new: Any) -> None:
        raise RuntimeError("handler bug")

    async def not_allowed(old: Any, new: Any) -> None:
        seen.append("awaited")  # never: inline handlers cannot be awaited

    def fine(old: Any, new: Any) -> None:
        seen.append(new["metadata"]["resourceVersion"])

    regs = [
        informer.add_event_handler(EventHandlerFuncs(update=fn), inline=True)
        for fn in (boom, not_allowed, fine)
    ]
    for reg in regs:
        reg.start()
    await informer.replace([pod("a")], "1")
    await wait_for(lambda: all(reg.can_call_now() for reg in regs))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        informer.apply_events([("MODIFIED", pod("a", "2"))])
        gc.collect()
    assert not [w for w in caught if "never awaited" in str(w.message)]  # the inline call closed it
    assert seen == ["2"] and informer.handler_errors == 2
    assert informer.indexer.get("default", "a")["metadata"]["resourceVersion"] == "2"  # type: ignore[index]


@pytest.mark.parametrize("read_size", [7, 100_000])
async def test_one_by_one_watch_keeps_the_resource_version(informer: SharedInformer, read_size: int) -> None:
    rec = Recorder()
    reg = informer.add_event_handler(rec, inline=True)
    reg.start()
    await informer.replace([pod("a")], "1")
    await wait_for(reg.can_call_now)
    bookmark = {"kind": "Pod", "metadata": {"resourceVersion": "9"}}
    lines = [
        {"type": "MODIFIED", "object": pod("a", "5")},
        {"type": "BOOKMARK", "object": bookmark},
        {"type": "ADDED", "object": pod("b", "8")},
    ]
    stream = watch_stream(b"".join(orjson.dumps(line) + b"\n" for line in lines), read_size)
    await informer.reflector._consume(stream)
    assert rec.events[1:] == [("update", "a", "1", "5"), ("add", "b", False)]
    # the last event after the last bookmark sets it, as in the per-read path
    assert informer.reflector.last_sync_resource_version == "8"
    await informer.reflector._consume(
        watch_stream(orjson.dumps({"type": "BOOKMARK", "object": bookmark}) + b"\n", 7)
    )
    assert informer.reflector.last_sync_resource_version == "9"


async def test_a_failing_inline_handler_does_not_keep_the_event_from_the_next(
    informer: SharedInformer,
) -> None:
    seen: list[tuple[str, str]] = []

    def boom(*args: Any) -> None:
        raise RuntimeError("handler bug")

    def record(kind: str) -> Any:
        return lambda obj, *rest: seen.append((kind, obj["metadata"]["name"]))

    failing = EventHandlerFuncs(add=boom, update=boom, delete=boom)
    recording = EventHandlerFuncs(add=record("add"), update=record("update"), delete=record("delete"))
    regs = [informer.add_event_handler(h, inline=True) for h in (failing, recording)]
    for reg in regs:
        reg.start()
    await informer.replace([], "1")
    await wait_for(lambda: all(reg.can_call_now() for reg in regs))
    for event_type, rv in (("ADDED", "2"), ("MODIFIED", "3"), ("DELETED", "4")):
        informer.apply_one(event_type, pod("a", rv), stripped=True)
    assert seen == [("add", "a"), ("update", "a"), ("delete", "a")]
    assert informer.handler_errors == 3 and all(reg.can_call_now() for reg in regs)


async def test_a_stripped_watch_event_still_gets_a_custom_transform() -> None:
    from manager.apimachinery.resources import PODS
    from manager.client.config import RestConfig
    from manager.client.rest import ApiClient

    def label(obj: dict[str, Any]) -> dict[str, Any]:
        obj["metadata"]["labels"] = {"seen": "yes"}
        return obj

    informer = SharedInformer(ApiClient(RestConfig(host="http://127.0.0.1:1")), PODS, transform=label)
    informer.apply_one("ADDED", pod("a"), stripped=True)
    informer.apply_events([("ADDED", pod("b"))], stripped=True)
    for name in ("a", "b"):
        assert informer.indexer.get("default", name)["metadata"]["labels"] == {"seen": "yes"}  # type: ignore[index]
