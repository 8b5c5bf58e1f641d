"""The namespace controller's plug-in contract, its handler and how a pass's outcome becomes a requeue."""

from __future__ import annotations

import importlib.metadata
from typing import Any

import pytest
import structlog

from controllers.namespace import NamespaceController
from controllers.namespace.controller import NamespaceEvents, NamespaceFlags
from controllers.namespace.deleter import ResourcesRemaining
from manager import ControllerContext, Request, Result
from manager.config.settings import Settings


def make(**settings: Any) -> NamespaceController:
    ctx = ControllerContext(
        settings=Settings.with_flags([NamespaceFlags])(**settings), health=None, logger=structlog.get_logger()
    )
    return NamespaceController(ctx)


def test_registered_entry_point_flags_and_queue() -> None:
    eps = {ep.name: ep.value for ep in importlib.metadata.entry_points(group="aiokcm.controllers")}
    assert eps["namespace-controller"] == "controllers.namespace:NamespaceController"
    assert NamespaceController.aliases == ("namespace",) and NamespaceController.enabled_by_default
    ctl = make()
    assert ctl.workers() == 10 and ctl.sync_period == 300.0 and ctl.workqueue_name() == "namespace"
    assert make(concurrent_namespace_syncs=3, namespace_sync_period="2m").sync_period == 120.0
    [watch] = ctl.declare_watches()
    assert watch.resync_period == 300.0 and watch.inline
    request = Request("", "ns")
    assert [ctl.queue.rate_limiter.when(request) for _ in range(3)] == [0.005, 0.01, 0.02]
    for _ in range(20):
        ctl.queue.rate_limiter.when(request)
    assert ctl.queue.rate_limiter.when(request) == 60.0  # capped at 60 s, not the default 1000 s


async def test_only_namespaces_being_deleted_are_queued_after_the_grace_period() -> None:
    ctl = make()
    events = NamespaceEvents(ctl)
    events.on_add({"metadata": {"name": "live"}}, True)
    events.on_update({}, {"metadata": {"name": "live", "labels": {"a": "b"}}})
    assert ctl.queue.waiting == 0 and len(ctl.queue) == 0
    events.on_update({}, {"metadata": {"name": "doomed", "deletionTimestamp": "2024-01-01T00:00:00Z"}})
    assert ctl.queue.waiting == 1 and len(ctl.queue) == 0  # not before the grace period


class FakeDeleter:
    def __init__(self, error: Exception | None) -> None:
        self.error = error
        self.deleted: list[str] = []

    async def delete(self, name: str) -> None:
        self.deleted.append(name)
        if self.error is not None:
            raise self.error


class FakeLister:
    def get_by_key(self, key: str) -> Any:
        return {"metadata": {"name": key}} if key != "gone" else None


@pytest.mark.parametrize(("estimate", "after"), [(30, 16), (15, 8), (1, 1)])
async def test_remaining_content_is_looked_at_again_after_half_the_estimate(
    estimate: int, after: int
) -> None:
    ctl = make()
    ctl.__dict__["deleter"] = FakeDeleter(ResourcesRemaining(estimate))
    ctl.lister = lambda resource, **_: FakeLister()  # type: ignore[assignment,method-assign]
    assert await ctl.reconcile(Request("", "ns")) == Result(requeue_after=after)


async def test_a_namespace_gone_from_the_cache_is_not_looked_at_and_errors_propagate() -> None:
    ctl = make()
    deleter = FakeDeleter(RuntimeError("boom"))
    ctl.__dict__["deleter"] = deleter
    ctl.lister = lambda resource, **_: FakeLister()  # type: ignore[assignment,method-assign]
    assert await ctl.reconcile(Request("", "gone")) is None
    assert deleter.deleted == []
    with pytest.raises(RuntimeError):  # the worker retries it through the rate limiter
        await ctl.reconcile(Request("", "ns"))
