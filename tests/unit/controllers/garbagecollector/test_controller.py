"""The garbage collector's plug-in contract, its flags, and one discovery round against a scripted discovery:
what gets monitored, what counts as a sync error, and what a partial failure keeps."""

from __future__ import annotations

import asyncio
import importlib.metadata
from collections.abc import Iterable
from typing import Any, cast

import pytest
import structlog
from prometheus_client import REGISTRY

import controllers.garbagecollector.controller as controller_module
from controllers.garbagecollector import GarbageCollectorController, GarbageCollectorFlags
from controllers.garbagecollector.resources import RestMapper, RestMappingError, deletable_resources, group_of
from manager import ApiClient, ApiResource, ControllerContext, Discovery, GroupVersionResource
from manager.config.settings import Settings

SYNC_ERRORS = "garbagecollector_controller_resources_sync_error_total"
ALL_VERBS = frozenset({"get", "list", "watch", "delete", "patch", "update", "create"})
PODS = GroupVersionResource("", "v1", "pods", "Pod")
EVENTS = GroupVersionResource("", "v1", "events", "Event")
NEW_EVENTS = GroupVersionResource("events.k8s.io", "v1", "events", "Event")
WIDGETS = GroupVersionResource("example.com", "v1", "widgets", "Widget")
BINDINGS = GroupVersionResource("", "v1", "bindings", "Binding")


def make(**settings: Any) -> GarbageCollectorController:
    settings_cls = Settings.with_flags([GarbageCollectorFlags])
    ctx = ControllerContext(
        settings=settings_cls(**settings),
        health=None,
        logger=structlog.get_logger(),
        client=cast(ApiClient, object()),  # never called: discovery is scripted
    )
    return GarbageCollectorController(ctx)


def discovery(*resources: GroupVersionResource, failed: dict[str, str] | None = None) -> Discovery:
    found = tuple(ApiResource(r, frozenset({"create"}) if r == BINDINGS else ALL_VERBS) for r in resources)
    return Discovery(found, failed or {})


def sync_errors() -> float:
    return REGISTRY.get_sample_value(SYNC_ERRORS) or 0.0


class FakeMonitors:
    def __init__(self, synced: Iterable[GroupVersionResource] = ()) -> None:
        self.monitors: dict[GroupVersionResource, Any] = {}
        self.synced = set(synced)
        self.errors: list[str] = []

    async def sync(self, resources: Iterable[GroupVersionResource]) -> list[str]:
        self.monitors = dict.fromkeys(resources)
        return self.errors

    def is_synced(self) -> bool:
        return bool(self.monitors) and all(r in self.synced for r in self.monitors)

    def is_resource_synced(self, gvr: GroupVersionResource) -> bool:
        return gvr in self.synced and gvr in self.monitors

    def unsynced(self) -> list[str]:
        return sorted(str(r) for r in self.monitors if r not in self.synced)


def scripted(monkeypatch: pytest.MonkeyPatch, *answers: Discovery | Exception) -> None:
    replies = list(answers)

    async def discover(client: Any) -> Discovery:
        answer = replies.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr(controller_module, "discover_resources", discover)


def test_registered_entry_point_names_and_flags() -> None:
    eps = {ep.name: ep.value for ep in importlib.metadata.entry_points(group="aiokcm.controllers")}
    assert eps["garbage-collector-controller"] == "controllers.garbagecollector:GarbageCollectorController"
    cls = GarbageCollectorController
    assert cls.name == "garbage-collector-controller" and cls.aliases == ("garbagecollector",)
    assert cls.enabled_by_default and cls.need_leader_election
    assert cls.resync_period == 30.0 and cls.initial_sync_timeout == 30.0
    flags = GarbageCollectorFlags()
    assert flags.concurrent_gc_syncs == 20 and flags.enable_garbage_collector
    assert make(concurrent_gc_syncs=0).workers() == 0  # upstream validates nothing: 0 builds the graph only
    rules = [rule.to_dict() for rule in cls.rbac]
    assert {
        "apiGroups": ["*"],
        "resources": ["*"],
        "verbs": ["get", "list", "watch", "patch", "delete"],  # every verb it calls; no update
    } in rules


def test_queues_and_their_rate_limiter() -> None:
    gc = make()
    assert gc.attempt_to_delete.name == "garbage_collector_attempt_to_delete"
    assert gc.attempt_to_orphan.name == "garbage_collector_attempt_to_orphan"
    assert gc.builder.graph_changes.name == "garbage_collector_graph_changes"
    item = object()
    delays = [gc.attempt_to_delete.rate_limiter.when(item) for _ in range(4)]
    assert delays == [0.005, 0.01, 0.02, 0.04]  # client-go's DefaultControllerRateLimiter


async def test_disabled_garbage_collector_idles_until_stopped() -> None:
    gc = make(enable_garbage_collector=False)
    task = asyncio.create_task(gc.run())
    await asyncio.sleep(0)
    assert not task.done() and gc.runs == 0 and not gc.monitors.monitors
    gc.ctx.stopping.set()
    await asyncio.wait_for(task, 1.0)


def test_deletable_resources_skip_events_and_resources_without_the_verbs() -> None:
    found = deletable_resources(discovery(PODS, EVENTS, NEW_EVENTS, WIDGETS, BINDINGS))
    assert found == {PODS, WIDGETS}


def test_rest_mapper_by_group_and_kind_in_any_version() -> None:
    mapper = RestMapper()
    mapper.update(discovery(PODS, WIDGETS))
    assert mapper.resource_for("v1", "Pod") == PODS
    assert mapper.resource_for("example.com/v1beta1", "Widget") == WIDGETS  # another version: same objects
    for api_version, kind in (("v1", "Widget"), ("example.com/v1", "Gadget"), ("a/b/c", "Pod"), ("", "Pod")):
        with pytest.raises(RestMappingError):
            mapper.resource_for(api_version, kind)
    mapper.update(discovery(PODS, failed={"example.com/v1": "boom"}))
    assert mapper.resource_for("example.com/v1", "Widget") == WIDGETS  # kept while its group cannot be read
    mapper.update(discovery(PODS))
    with pytest.raises(RestMappingError):
        mapper.resource_for("example.com/v1", "Widget")
    assert (group_of("v1"), group_of("apps/v1"), group_of("x/")) == ("", "apps", None)


async def test_a_discovery_round_adds_monitors_and_skips_an_unchanged_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gc = make()
    fake = FakeMonitors(synced={PODS, WIDGETS})
    gc.monitors = fake  # type: ignore[assignment]
    scripted(monkeypatch, discovery(PODS, WIDGETS), discovery(PODS, WIDGETS), discovery(PODS))
    current = await gc.sync_resources(set())
    assert current == {PODS, WIDGETS} and set(fake.monitors) == current
    assert await gc.sync_resources(current) is current
    assert await gc.sync_resources(current) == {PODS}  # the CRD went: its monitor too
    assert set(fake.monitors) == {PODS}


async def test_sync_errors_are_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    gc = make()
    fake = FakeMonitors(synced={PODS})
    gc.monitors = fake  # type: ignore[assignment]
    monkeypatch.setattr(GarbageCollectorController, "resync_period", 0.05)
    scripted(monkeypatch, RuntimeError("unreachable"), discovery(), discovery(PODS, WIDGETS), discovery(PODS))
    before = sync_errors()
    assert await gc.sync_resources(set()) == set()  # discovery failed
    assert await gc.sync_resources(set()) == set()  # no resources at all
    assert await gc.sync_resources(set()) == {PODS, WIDGETS}  # widgets never sync: a timeout
    assert sync_errors() == before + 3
    fake.errors = ["couldn't start monitor"]
    assert await gc.sync_resources({PODS, WIDGETS}) == {PODS, WIDGETS}  # kept: tried again next round
    assert sync_errors() == before + 4


async def test_partial_discovery_keeps_the_synced_monitors_of_failed_groups(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gc = make()
    fake = FakeMonitors(synced={PODS, WIDGETS})
    gc.monitors = fake  # type: ignore[assignment]
    scripted(monkeypatch, discovery(PODS, WIDGETS), discovery(PODS, failed={"example.com/v1": "503"}))
    current = await gc.sync_resources(set())
    assert await gc.sync_resources(current) == {PODS, WIDGETS}
    assert set(fake.monitors) == {PODS, WIDGETS}
