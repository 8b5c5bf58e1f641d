"""Keep CPython's cyclic GC from walking the informer caches.

A full collection visits every tracked container; with 100,000 cached pods that is millions of dicts and
lists: an event-loop stall of the order of a second, repeated whenever enough new objects have been
promoted to the oldest generation (the figures: docs/design/performance.md). Cached objects are acyclic JSON
trees, so reference counting alone frees them when they are replaced; the cyclic GC finds nothing there.

Why the young generation matters too: in steady state every watch event allocates a new object and frees
the one it replaces, so the allocation count that triggers automatic collections barely moves, and new
objects pile up in generation 0 unexamined — until some other allocation burst triggers a collection that
walks all of them at once.
Walking them is not cheap either: one generation-0 pass over a freshly decoded pod costs about as much as
decoding it (a pod has dozens of tracked containers), so any policy that lets the collector look at every
new cache object once halves the ingest rate.

Policy (benchmarks/loop_stall.py and benchmarks/informer_ingest.py measure it):
- each network read of a watch is ingested in one synchronous block (`ingest_batch()`): first a
  generation-0 collection, which only holds what the rest of the process allocated since the previous
  batch (small; young cyclic garbage is freed here, before it could be frozen), then the batch with
  automatic collections off, then `gc.freeze()`: everything alive moves to the permanent generation, which
  collections skip. New cache objects are therefore never walked, and automatic collections between
  batches only see what the rest of the process allocated meanwhile.
- lists: pages are decoded with collections paused and frozen every `refreeze_every` objects.
- objects replaced after being frozen are still freed by reference counting: the cache holds no cycles.
- the price: a reference cycle that is alive at a freeze and dies later (e.g. an in-flight request's
  objects) is never collected. benchmarks/loop_stall.py measures how much that is (unfreeze + collect at
  the end of a run); `unfreeze_and_collect()` gives it back at the cost of one full pause, and
  `GC_POLICY.enabled = False` turns the whole policy off.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


class GcFreezePolicy:
    def __init__(self, refreeze_every: int = 2_000, enabled: bool = True) -> None:
        self.refreeze_every = refreeze_every
        self.enabled = enabled
        self.pending = 0
        self.freezes = 0

    def freeze(self) -> None:
        """Move every live object to the permanent generation (no collection: see the module docstring)."""
        self.pending = 0
        if not self.enabled:
            return
        gc.freeze()
        self.freezes += 1

    def ingested(self, count: int = 1) -> None:
        """Called by informers per ingested object; refreezes every `refreeze_every` objects."""
        self.pending += count
        if self.pending >= self.refreeze_every:
            self.freeze()

    @contextmanager
    def ingest_batch(self) -> Iterator[None]:
        """Collect generation 0, run the block with collections off, then freeze (see the docstring)."""
        began = self.enabled and gc.isenabled()
        if began:
            if gc.get_count()[0]:
                gc.collect(0)
            gc.disable()
        try:
            yield
        finally:
            self.end_batch(began)

    def begin_batch(self) -> bool:
        """`ingest_batch()` without a context manager, for the per-read hot path: collect generation 0 and
        turn automatic collections off; returns whether `end_batch` must freeze and re-enable."""
        if not self.enabled or not gc.isenabled():
            return False
        # Unconditional: the allocation count can be 0 while generation 0 holds young objects (frees of
        # frozen cache objects count down too), and what is not collected now is frozen for good.
        gc.collect(0)
        gc.disable()
        return True

    def end_batch(self, began: bool) -> None:
        if began:
            gc.freeze()
            self.pending = 0
            gc.enable()

    @contextmanager
    def paused(self) -> Iterator[None]:
        """No automatic collection inside this synchronous block (never hold it across an await)."""
        if not self.enabled or not gc.isenabled():
            yield
            return
        gc.disable()
        try:
            yield
        finally:
            gc.enable()

    def unfreeze_and_collect(self) -> int:
        """Give frozen objects back to the collector and run a full collection (one long pause)."""
        gc.unfreeze()
        return gc.collect()


GC_POLICY = GcFreezePolicy()
