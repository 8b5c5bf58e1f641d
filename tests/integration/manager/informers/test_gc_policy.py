"""The informers' GC policy on a real watch over HTTP: a dead young reference cycle is collected by the next
network read's batch, never frozen for good (manager/informers/gcpolicy.py)."""

from __future__ import annotations

import functools
import gc
import weakref
from collections.abc import Iterator
from typing import Any

import pytest

from manager.apimachinery.resources import CONFIGMAPS
from manager.client import create_client
from manager.informers import SharedInformer
from tests.helpers import wait_for

NS = "default"


class Node:
    def __init__(self) -> None:
        self.me = self


@pytest.fixture
def policy_alone() -> Iterator[None]:
    """Automatic collections out of reach (threshold 2**30, the collector still enabled, so the policy runs):
    a cycle freed meanwhile was freed by the policy's own collection."""
    thresholds = gc.get_threshold()
    gc.set_threshold(1 << 30)
    yield
    gc.set_threshold(*thresholds)


@pytest.mark.usefixtures("policy_alone")
async def test_a_watch_read_collects_a_dead_young_cycle_before_it_freezes(kubesim: Any) -> None:
    client = await create_client(kubeconfig=kubesim.kubeconfig, qps=0)
    informer = SharedInformer(client, CONFIGMAPS)
    informer.start()
    try:
        await wait_for(informer.has_synced)
        for i in range(3):
            cycle = Node()
            dead = weakref.ref(cycle)
            del cycle  # only the cyclic collector can free it
            freezes = gc.get_freeze_count()
            name = f"cm-{i}"
            await client.create(CONFIGMAPS, {"metadata": {"name": name, "namespace": NS}}, NS)
            await wait_for(functools.partial(informer.indexer.get, NS, name))
            assert gc.get_freeze_count() > freezes  # the event's read froze its objects
            assert dead() is None  # ... after collecting generation 0, not with the cycle in it
    finally:
        await informer.stop()
        await client.close()
        gc.unfreeze()
