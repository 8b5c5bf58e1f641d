"""The watch history's memory: a retained event of a typical running pod (about 3 KB of JSON, managedFields
included) costs at most 4 KB, because the history keeps the object's encoded bytes once (shared with the next
event's "old" side) and rebuilds events on demand, instead of the decoded dicts and wire-line copies."""

from __future__ import annotations

import gc
import time
import tracemalloc
from pathlib import Path
from typing import Any

import orjson

from kubesim.storage.store import Store

RUNNING_POD: dict[str, Any] = orjson.loads((Path(__file__).parent / "running_pod.json").read_bytes())
PER_EVENT_BOUND = 4096


def pod(name: str) -> dict[str, Any]:
    obj: dict[str, Any] = orjson.loads(orjson.dumps(RUNNING_POD))
    meta = obj["metadata"]
    meta["name"] = name
    for key in ("uid", "resourceVersion", "creationTimestamp"):
        meta.pop(key, None)
    return obj


def history_bytes_per_event(pods: int, updates: int) -> tuple[float, int]:
    """Fill a store's history with `updates` status updates spread over `pods` pods; return the traced bytes
    the history holds per retained event, and how many it retains."""
    store = Store(history_size=updates, clock=time.time)
    for i in range(pods):
        store.create("pods", pod(f"p{i}"))
    tracemalloc.start()
    try:
        for n in range(updates):
            current = store.get("pods", "default", f"p{n % pods}")
            assert current is not None
            current["status"]["conditions"][0]["lastProbeTime"] = f"2026-01-01T00:00:{n % 60:02d}Z"
            current["metadata"].setdefault("annotations", {})["seq"] = str(n)
            store.update("pods", current)
        retained = len(store.events_since("pods", store.floor("pods")))
        gc.collect()
        with_history = tracemalloc.get_traced_memory()[0]
        store.compact()  # drops every retained event and nothing else
        gc.collect()
        without_history = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    return (with_history - without_history) / retained, retained


def test_a_retained_pod_event_costs_at_most_4_kb() -> None:
    encoded = len(orjson.dumps(RUNNING_POD))
    per_event, retained = history_bytes_per_event(pods=50, updates=3000)
    assert retained == 3000
    assert per_event <= PER_EVENT_BOUND, f"{per_event:.0f} bytes per retained event"
    assert per_event >= encoded  # sanity: the measurement sees the bytes themselves


def test_events_rebuilt_from_history_carry_both_sides() -> None:
    store = Store(history_size=10)
    created = store.create("pods", pod("p"))
    changed = store.get("pods", "default", "p")
    assert changed is not None
    changed["metadata"]["labels"]["more"] = "yes"
    store.update("pods", changed)
    added, modified = store.events_since("pods", 0)
    assert (added.type, added.old, added.obj) == ("ADDED", None, created)
    assert modified.type == "MODIFIED" and modified.obj == changed
    assert modified.old is not None and modified.old.obj == created and modified.old.rv == added.rv
    assert modified.old.data is added.entry.data  # one bytes object for one revision
    assert modified.line() == b'{"type":"MODIFIED","object":' + orjson.dumps(changed) + b"}\n"
