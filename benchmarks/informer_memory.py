"""Retained memory per cached pod (tracemalloc), informer vs a bare orjson dict with managedFields stripped.

    .venv/bin/python benchmarks/informer_memory.py [N]        (default N=20,000)

Each figure is the traced heap growth after building the representation from the same list-page bytes,
divided by N. The informer figures include everything the informer keeps per object: the cached dict, its
key string, the items dict slot and the namespace index entry. Budgets: full objects <= 1.2 x the bare
stripped dict; metadata-only <= 3 KB per pod.
"""

from __future__ import annotations

import asyncio
import gc
import sys
import tracemalloc
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from informer_fixtures import PagedListClient, list_pages

from manager.apimachinery.resources import PODS
from manager.informers import SharedInformer


async def retained(build: Callable[[], Awaitable[Any]]) -> tuple[int, Any]:
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    kept = await build()
    gc.collect()
    used = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return used, kept


async def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    pages = list_pages(n)
    print(f"N={n:,} pods, {sum(map(len, pages)) / n:,.0f} B/pod of JSON with managedFields")

    async def bare_stripped() -> list[Any]:
        items: list[Any] = []
        for page in pages:
            for item in orjson.loads(page)["items"]:
                item["metadata"].pop("managedFields", None)
                items.append(item)
        return items

    async def bare_full() -> list[Any]:
        items: list[Any] = []
        for page in pages:
            items.extend(orjson.loads(page)["items"])
        return items

    async def informer(metadata_only: bool) -> SharedInformer:
        inf = SharedInformer(PagedListClient(pages), PODS, metadata_only=metadata_only)
        await inf.reflector._list()
        assert len(inf.indexer) == n
        return inf

    full, kept = await retained(bare_full)
    del kept
    stripped, kept = await retained(bare_stripped)
    del kept
    ours, kept = await retained(lambda: informer(False))
    del kept
    meta, kept = await retained(lambda: informer(True))
    del kept
    print(f"bare orjson dict, with managedFields        {full / n:>8,.0f} B/pod")
    print(f"bare orjson dict, managedFields stripped    {stripped / n:>8,.0f} B/pod   (the reference)")
    ratio = ours / stripped
    label = "informer cache (full objects)"
    print(f"{label:<44}{ours / n:>8,.0f} B/pod   = {ratio:.2f} x reference (budget 1.2)")
    print(f"informer cache, metadata-only               {meta / n:>8,.0f} B/pod   (budget 3,000 B)")


if __name__ == "__main__":
    asyncio.run(main())
