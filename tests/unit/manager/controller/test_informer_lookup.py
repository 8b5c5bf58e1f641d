"""Controller.informer() resolves a selector-less lookup once, and looks again after the factory forgets an
informer. Nothing is started: no request leaves the client."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from typing import Any

import pytest
import structlog

from manager import CONFIGMAPS, JOBS, PODS, Controller, ControllerContext, For, InformerFactory
from manager.client.rest import create_client
from manager.config.settings import Settings


class Reader(Controller):
    name = "reader-controller"
    watches = (For(CONFIGMAPS, label_selector="app=x"), For(JOBS, metadata_only=True))


class CountingFactory(InformerFactory):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lookups = 0

    def informer(self, *args: Any, **kwargs: Any) -> Any:
        self.lookups += 1
        return super().informer(*args, **kwargs)


@pytest.fixture
async def reader() -> AsyncIterator[tuple[CountingFactory, Reader]]:
    client = await create_client(master="http://127.0.0.1:9")  # never contacted
    factory = CountingFactory(client)
    ctx = ControllerContext(
        settings=Settings(), health=None, logger=structlog.get_logger(), informers=factory
    )
    yield factory, Reader(ctx)
    await factory.shutdown()
    await client.close()


async def test_declared_watch_resolved_once(reader: tuple[CountingFactory, Reader]) -> None:
    factory, ctl = reader
    declared = factory.informer(CONFIGMAPS, label_selector="app=x")
    factory.lookups = 0
    assert ctl.informer(CONFIGMAPS) is declared
    assert ctl.lister(CONFIGMAPS) is declared.lister
    assert ctl.informer(CONFIGMAPS) is declared
    assert factory.lookups == 1, "the second and third lookups come from the controller's cache"


async def test_undeclared_resource_and_explicit_selectors(reader: tuple[CountingFactory, Reader]) -> None:
    factory, ctl = reader
    pods = ctl.informer(PODS)
    assert pods is factory.informer(PODS) and ctl.informer(PODS) is pods
    other = ctl.informer(CONFIGMAPS, label_selector="app=y")
    assert other is not ctl.informer(CONFIGMAPS)
    assert other is ctl.informer(CONFIGMAPS, label_selector="app=y")
    assert ctl.informer(CONFIGMAPS, namespace="") is ctl.informer(CONFIGMAPS), "empty selectors: no selector"


async def test_looks_again_after_the_factory_discards(reader: tuple[CountingFactory, Reader]) -> None:
    factory, ctl = reader
    monitored = factory.monitor(JOBS)  # metadata-only, the key the controller's watch declares
    assert ctl.informer(JOBS) is monitored
    assert await factory.discard(monitored)
    fresh = ctl.informer(JOBS)
    assert fresh is not monitored
    assert fresh is factory.informer(JOBS, metadata_only=True)


async def test_lister_by_identity(reader: tuple[CountingFactory, Reader]) -> None:
    """The identity cache of lister(): an equal resource built anew reads the same cache, a resource
    object built per call keeps the cache bounded, and a discarded informer is looked up again."""
    factory, ctl = reader
    declared = factory.informer(CONFIGMAPS, label_selector="app=x")
    assert ctl.lister(CONFIGMAPS) is declared.lister
    copy = dataclasses.replace(CONFIGMAPS)
    assert copy is not CONFIGMAPS and ctl.lister(copy) is declared.lister
    for _ in range(200):
        assert ctl.lister(dataclasses.replace(CONFIGMAPS)) is declared.lister
    assert len(ctl._listers_by_id) <= 64
    monitored = factory.monitor(JOBS)
    assert ctl.lister(JOBS) is monitored.lister
    assert await factory.discard(monitored)
    fresh = ctl.lister(JOBS)
    assert fresh is not monitored.lister and fresh is factory.informer(JOBS, metadata_only=True).lister
