"""The garbage collector's memory at scale: N objects of mixed kinds cached by metadata-only informers, and
the graph built over them (tracemalloc, retained bytes).

    .venv/bin/python benchmarks/gc_graph_memory.py [N]        (default N = 100,000)

The mix: 60 % pods (owned by ReplicaSets or Jobs), 10 % ReplicaSets (owned by Deployments), 2 % Deployments,
3 % Jobs, 15 % ConfigMaps and 10 % Secrets (no owners), every object with realistic metadata (labels,
annotations, managedFields as the API server sends them). Each kind is listed into its own metadata-only
SharedInformer through the real reflector (the HTTP transport is skipped); then every cached object goes
through the graph builder as the monitors' add events would. Budgets: caches <= 3 KB per object, the graph
<= 1 KB per object on top of them.
"""

from __future__ import annotations

import asyncio
import sys
import uuid
from typing import Any

import orjson
from informer_fixtures import PagedListClient, make_pod, managed_fields
from informer_memory import retained

from controllers.garbagecollector.builder import GraphBuilder
from controllers.garbagecollector.events import ADD, GraphEvent
from manager import CONFIGMAPS, DEPLOYMENTS, JOBS, PODS, REPLICASETS, RateLimitingQueue, SharedInformer
from manager.apimachinery.resources import GroupVersionResource
from manager.cli.logging import configure_logging

SECRETS = GroupVersionResource("", "v1", "secrets", "Secret")
MIX = (
    (PODS, 0.60),
    (REPLICASETS, 0.10),
    (DEPLOYMENTS, 0.02),
    (JOBS, 0.03),
    (CONFIGMAPS, 0.15),
    (SECRETS, 0.10),
)
PAGE = 500


def uid(kind: str, i: int) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_OID, f"{kind}-{i}"))


def owner(api_version: str, kind: str, name: str, owner_uid: str) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": owner_uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def metadata(gvr: GroupVersionResource, i: int, owners: list[dict[str, Any]]) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": f"{gvr.resource[:-1]}-{i:06d}",
        "namespace": f"team-{i % 50:02d}",
        "uid": uid(gvr.kind, i),
        "resourceVersion": str(1_000_000 + i),
        "generation": 1,
        "creationTimestamp": "2024-05-01T10:00:00Z",
        "labels": {"app": f"app-{i % 300}", "tier": "backend", "team": f"team-{i % 50:02d}"},
        "annotations": {"meta.helm.sh/release-name": f"release-{i % 300}"},
        "managedFields": managed_fields()[:2],
    }
    if owners:
        meta["ownerReferences"] = owners
    return meta


def objects(gvr: GroupVersionResource, count: int, counts: dict[str, int]) -> list[dict[str, Any]]:
    """`count` objects of `gvr`, owned as the mix says (owners are the i-th object of the owner kind)."""
    items = []
    for i in range(count):
        if gvr == PODS:
            pod = make_pod(i)
            by_job = i % 20 == 0
            kind, api_version = ("Job", "batch/v1") if by_job else ("ReplicaSet", "apps/v1")
            k = i % counts["Job" if by_job else "ReplicaSet"]
            pod["metadata"]["uid"] = uid("Pod", i)
            name = f"{'job' if by_job else 'replicaset'}-{k:06d}"
            pod["metadata"]["ownerReferences"] = [owner(api_version, kind, name, uid(kind, k))]
            items.append(pod)
            continue
        owners = []
        if gvr == REPLICASETS:
            k = i % counts["Deployment"]
            owners = [owner("apps/v1", "Deployment", f"deployment-{k:06d}", uid("Deployment", k))]
        items.append({"apiVersion": gvr.api_version, "kind": gvr.kind, "metadata": metadata(gvr, i, owners)})
    return items


def pages(gvr: GroupVersionResource, items: list[dict[str, Any]]) -> list[bytes]:
    out = []
    for start in range(0, len(items), PAGE):
        meta = {"resourceVersion": "2000000"}
        if start + PAGE < len(items):
            meta["continue"] = f"token-{start + PAGE}"
        body = {"kind": f"{gvr.kind}List", "apiVersion": gvr.api_version, "metadata": meta}
        out.append(orjson.dumps({**body, "items": items[start : start + PAGE]}))
    return out


async def main() -> None:
    configure_logging("json", "warning")
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    counts = {gvr.kind: max(1, int(n * share)) for gvr, share in MIX}
    listed = {gvr: pages(gvr, objects(gvr, counts[gvr.kind], counts)) for gvr, _share in MIX}
    total = sum(counts.values())

    async def caches() -> list[SharedInformer[Any]]:
        informers = []
        for gvr, body in listed.items():
            informer: SharedInformer[Any] = SharedInformer(PagedListClient(body), gvr, metadata_only=True)
            await informer.reflector._list()
            informers.append(informer)
        return informers

    cache_bytes, informers = await retained(caches)
    listed.clear()

    async def graph() -> GraphBuilder:
        builder = GraphBuilder(RateLimitingQueue(), RateLimitingQueue(), lambda *args: None)
        for informer in informers:
            gvr = informer.gvr
            for obj in informer.indexer.list():
                builder.process(GraphEvent(ADD, obj, gvr.api_version, gvr.kind))
        return builder

    graph_bytes, builder = await retained(graph)
    virtual = sum(node.virtual for node in builder.uid_to_node.values())
    print(f"N={total:,} objects: " + ", ".join(f"{counts[gvr.kind]:,} {gvr.resource}" for gvr, _ in MIX))
    print(f"graph nodes: {len(builder.uid_to_node):,} ({virtual} virtual)")
    print(f"metadata-only informer caches  {cache_bytes / total:>7,.0f} B/object   (budget 3,000 B)")
    print(f"garbage collector graph         {graph_bytes / total:>7,.0f} B/object   (budget 1,024 B)")


if __name__ == "__main__":
    asyncio.run(main())
