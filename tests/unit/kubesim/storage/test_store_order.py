"""The store's cached (namespace, name) order: pages read only what they need and survive writes."""

from __future__ import annotations

import time

from kubesim.storage.store import Store


def _cm(namespace: str, name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": namespace, "name": name}}


def test_iter_entries_after_a_key_and_count_after_follow_creates_and_deletes() -> None:
    store = Store(history_size=100, clock=time.time)
    for ns in ("b", "a", "c"):
        for name in ("z", "m", "a"):
            store.create("configmaps", _cm(ns, name))
    keys = [(e.namespace, e.name) for e in store.iter_entries("configmaps")]
    assert keys == sorted(keys) and len(keys) == 9
    assert [e.name for e in store.iter_entries("configmaps", "b", after=("b", "a"))] == ["m", "z"]
    assert store.count_after("configmaps", None, ("b", "m")) == 4
    assert store.count_after("configmaps", "b", ("b", "a")) == 2
    store.delete("configmaps", "b", "m")
    store.create("configmaps", _cm("b", "n"))
    assert [e.name for e in store.iter_entries("configmaps", "b")] == ["a", "n", "z"]
    assert store.count_after("configmaps", "b", ("b", "a")) == 2
    assert list(store.iter_entries("configmaps", "nothing-here")) == []
