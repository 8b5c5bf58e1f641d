"""`Entry.namespace` is worked out once per entry (every namespaced watch an event reaches reads it): the same
answer for a decoded and a lazily decoded entry, "" for a cluster-scoped object, and the store's events
reach only the watches of their namespace."""

from __future__ import annotations

import orjson

from kubesim.storage.records import Entry
from kubesim.storage.store import Store, WatchEvent


def test_namespace_of_decoded_lazy_and_cluster_scoped_entries() -> None:
    namespaced = {"metadata": {"name": "a", "namespace": "ns1"}}
    cluster = {"metadata": {"name": "n"}}
    for obj in (namespaced, cluster):
        data = orjson.dumps(obj)
        decoded, lazy = Entry(obj, data, 1), Entry(None, data, 1)
        expected = obj["metadata"].get("namespace", "")
        assert decoded.namespace == lazy.namespace == expected
        assert decoded.namespace == expected  # the remembered answer, asked again


def test_events_carry_their_own_namespace() -> None:
    store = Store()
    seen: list[tuple[str, str]] = []

    def record(event: WatchEvent) -> None:
        seen.append((event.type, event.entry.namespace))

    store.subscribe("configmaps", record)
    for namespace in ("ns1", "ns2"):
        store.create("configmaps", {"metadata": {"name": "c", "namespace": namespace}})
    updated = {"metadata": {"name": "c", "namespace": "ns2"}, "data": {"k": "v"}}
    store.update("configmaps", updated)
    assert seen == [("ADDED", "ns1"), ("ADDED", "ns2"), ("MODIFIED", "ns2")]
