"""SqliteJournal on a bare Store: one commit per event-loop turn, and what a reopened store gets back (objects
as last written, revisions, history with its floor and "old" sides, compaction, dropped resources)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from kubesim.status.errors import ApiError
from kubesim.storage.durable import SqliteJournal
from kubesim.storage.store import Store


def configmap(name: str, value: str = "v") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
        "data": {"k": value},
    }


@contextmanager
def durable_store(path: Path, history_size: int = 100) -> Iterator[tuple[Store, SqliteJournal]]:
    store = Store(history_size=history_size)
    journal = SqliteJournal.open(path)
    journal.load(store)
    journal.attach(store)
    try:
        yield store, journal
    finally:
        journal.close()


async def test_the_writes_of_one_loop_turn_are_one_commit(tmp_path: Path) -> None:
    with durable_store(tmp_path) as (store, journal):
        for i in range(100):
            store.create("configmaps", configmap(f"c{i}"))
        assert journal.commits == 0  # nothing saved inside the turn
        await asyncio.sleep(0)  # one loop turn: the scheduled commit runs
        assert journal.commits == 1
        for i in range(10):
            store.delete("configmaps", "default", f"c{i}")
        await asyncio.sleep(0)
        assert journal.commits == 2
    with durable_store(tmp_path) as (store, _):
        assert store.count("configmaps") == 90


async def test_a_delete_and_a_create_of_one_name_in_one_group_keep_the_newest(tmp_path: Path) -> None:
    with durable_store(tmp_path) as (store, _):
        store.create("configmaps", configmap("c", "first"))
        store.delete("configmaps", "default", "c")
        second = store.create("configmaps", configmap("c", "second"))
        gone = store.create("configmaps", configmap("gone"))
        store.delete("configmaps", "default", "gone")
        assert gone["metadata"]["name"] == "gone"
    with durable_store(tmp_path) as (store, _):
        assert store.get("configmaps", "default", "c") == second
        assert store.get("configmaps", "default", "gone") is None


def test_history_floor_and_previous_states_come_back(tmp_path: Path) -> None:
    with durable_store(tmp_path, history_size=3) as (store, _):
        created = store.create("configmaps", configmap("c", "0"))
        for value in "1234":
            current = store.get("configmaps", "default", "c")
            assert current is not None
            current["data"]["k"] = value
            store.update("configmaps", current)
        floor, rv = store.floor("configmaps"), store.resource_version
        states = {
            r: [e.obj["data"]["k"] for e in store.list_at("configmaps", r)] for r in range(floor, rv + 1)
        }
    with durable_store(tmp_path, history_size=3) as (store, _):
        assert (store.floor("configmaps"), store.resource_version) == (floor, rv)
        assert [e.rv for e in store.events_since("configmaps", floor)] == list(range(floor + 1, rv + 1))
        assert {r: [e.obj["data"]["k"] for e in store.list_at("configmaps", r)] for r in states} == states
        with pytest.raises(ApiError) as expired:
            store.events_since("configmaps", int(created["metadata"]["resourceVersion"]))
        assert expired.value.code == 410


def test_compaction_and_dropped_resources_are_saved(tmp_path: Path) -> None:
    with durable_store(tmp_path) as (store, _):
        store.create("configmaps", configmap("c"))
        store.create("widgets.example.com", {"metadata": {"name": "w", "namespace": "default"}})
        compacted = store.compact()
        store.drop_resource("widgets.example.com")
    with durable_store(tmp_path) as (store, _):
        assert store.floor("configmaps") == compacted
        assert store.count("configmaps") == 1 and store.count("widgets.example.com") == 0


def test_revisions_continue_after_a_clean_close(tmp_path: Path) -> None:
    with durable_store(tmp_path) as (store, _):
        store.create("configmaps", configmap("a"))
        last = store.resource_version
    with durable_store(tmp_path) as (store, _):
        assert store.resource_version == last
        assert store.create("configmaps", configmap("b"))["metadata"]["resourceVersion"] == str(last + 1)
