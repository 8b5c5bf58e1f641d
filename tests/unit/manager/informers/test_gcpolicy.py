"""The informers' GC policy: young cyclic garbage is collected before each freeze, never frozen for good."""

from __future__ import annotations

import gc
import weakref

from manager.informers.gcpolicy import GcFreezePolicy


class Node:
    def __init__(self) -> None:
        self.me = self


def test_batch_collects_a_dead_young_cycle_even_when_the_allocation_count_is_zero() -> None:
    policy = GcFreezePolicy()
    old: list[list[object]] = [[] for _ in range(1000)]  # cache objects, frozen by an earlier batch
    gc.freeze()
    try:
        cycle = Node()
        alive = weakref.ref(cycle)
        del cycle  # unreachable, but only the cyclic collector can free it
        old.clear()  # frees of frozen objects count the young generation down again
        assert gc.get_count()[0] == 0 and alive() is not None
        began = policy.begin_batch()
        policy.end_batch(began)
        assert began and alive() is None
    finally:
        gc.unfreeze()
