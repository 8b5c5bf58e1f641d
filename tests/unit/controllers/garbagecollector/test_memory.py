"""The graph's memory on top of the informer caches: the budget is 1 KB per object at 100,000 objects. The
graph shares the cached objects' strings and ownerReferences lists, so what it adds is the nodes, the uid
map and the dependents sets."""

from __future__ import annotations

import gc
import tracemalloc
import uuid
from typing import Any

from controllers.garbagecollector.builder import GraphBuilder
from controllers.garbagecollector.events import ADD, GraphEvent
from manager import RateLimitingQueue

OBJECTS = 20_000  # enough for a stable per-object figure, fast enough for the quick suite
PODS_PER_OWNER = 50
BUDGET_BYTES = 1024


def cached_objects() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Metadata as a metadata-only informer caches it: ReplicaSets, and pods each owned by one of them."""
    owners = []
    for i in range(OBJECTS // PODS_PER_OWNER):
        owners.append({"metadata": {"name": f"rs-{i}", "namespace": "default", "uid": str(uuid.uuid4())}})
    pods = []
    for i in range(OBJECTS - len(owners)):
        owner = owners[i % len(owners)]["metadata"]
        ref = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "name": owner["name"],
            "uid": owner["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
        meta: dict[str, Any] = {
            "name": f"{owner['name']}-{i}",
            "namespace": "default",
            "uid": str(uuid.uuid4()),
        }
        meta["ownerReferences"] = [ref]
        pods.append({"metadata": meta})
    return owners, pods


def test_graph_memory_per_object_is_within_budget() -> None:
    owners, pods = cached_objects()
    builder = GraphBuilder(RateLimitingQueue(), RateLimitingQueue(), lambda *args: None)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        for owner in owners:
            builder.process(GraphEvent(ADD, owner, "apps/v1", "ReplicaSet"))
        for pod in pods:
            builder.process(GraphEvent(ADD, pod, "v1", "Pod"))
        gc.collect()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    added = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    per_object = added / OBJECTS
    assert len(builder.uid_to_node) == OBJECTS
    assert not any(node.virtual for node in builder.uid_to_node.values())
    assert per_object < BUDGET_BYTES / 2, f"{per_object:.0f} bytes of graph per object"
