"""Keep CPython's cyclic GC from walking the informer caches.

A full collection visits every tracked container; with 100,000 cached pods that is millions of dicts and
lists and took 1.4 s on the reference machine (performance reference §1.7 [C2]): a 1.4 s event-loop stall,
repeated whenever enough new objects have been promoted to the oldest generation. Cached objects are acyclic
JSON trees, so reference counting alone frees them when they are replaced; the cyclic GC finds nothing there.

Policy (measured in benchmarks/loop_stall.py):
- after an informer's initial sync, and after every `refreeze_every` ingested objects, run a young-generation
  collection (cheap: it only visits objects created since the last one) and `gc.freeze()`: everything alive
  moves to the permanent generation, which later collections skip.
- objects replaced after being frozen are still freed by reference counting.
The price: a reference cycle that was alive at a freeze and becomes garbage later is never collected (e.g. the
objects of a long-lived watch connection). That leak is bounded by the number of watch restarts and small next
to the pauses it removes; `unfreeze_and_collect()` exists for operators who prefer a one-off pause.
While a large list is decoded, automatic collections are paused (`paused()`), since they would only walk the
freshly decoded, acyclic items again and again (the initial list is GC-bound otherwise: 4x slower).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


class GcFreezePolicy:
    def __init__(self, refreeze_every: int = 5_000, enabled: bool = True) -> None:
        self.refreeze_every = refreeze_every
        self.enabled = enabled
        self.pending = 0
        self.freezes = 0

    def freeze(self) -> None:
        """Collect the young generations, then move every live object to the permanent generation."""
        self.pending = 0
        if not self.enabled:
            return
        gc.collect(1)
        gc.freeze()
        self.freezes += 1

    def ingested(self, count: int = 1) -> None:
        """Called by informers per ingested object; refreezes every `refreeze_every` objects."""
        self.pending += count
        if self.pending >= self.refreeze_every:
            self.freeze()

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
