"""The ReplicaSet controller's informer event handlers (upstream pkg/controller/replicaset/replica_set.go
addPod, updatePod, deletePod) against its real informer caches and work queue, without an API server: which
keys each event wakes and which expectations it fulfils."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
import structlog

from controllers.replicaset import ReplicaSetController
from controllers.replicaset.handlers import PodEvents, ReplicaSetEvents
from manager import ControllerContext, Request
from manager.client.rest import create_client
from manager.config.settings import Settings
from manager.informers import InformerFactory
from manager.informers.handlers import DeletedFinalStateUnknown
from manager.lifecycle.healthz import HealthChecks


@pytest_asyncio.fixture
async def ctl() -> AsyncIterator[ReplicaSetController]:
    client = await create_client(master="http://127.0.0.1:9")  # never contacted: informers are not started
    ctx = ControllerContext(
        settings=Settings(master="http://127.0.0.1:9"),
        health=HealthChecks(),
        logger=structlog.get_logger(),
        client=client,
        informers=InformerFactory(client),
    )
    controller = ReplicaSetController(ctx)
    controller.setup()
    yield controller
    await client.close()


def rs(
    name: str, uid: str, *, namespace: str = "ns", selector: dict[str, Any] | None = None, **spec: Any
) -> Any:
    return {
        "metadata": {"name": name, "namespace": namespace, "uid": uid},
        "spec": {"selector": {"matchLabels": {"app": name}} if selector is None else selector, **spec},
    }


def pod(
    name: str, labels: dict[str, str] | None = None, owner: Any = None, rv: str = "1", **meta: Any
) -> Any:
    metadata: dict[str, Any] = {"name": name, "namespace": "ns", "resourceVersion": rv}
    metadata["labels"] = labels or {}
    if owner is not None:
        metadata["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": owner.get("kind", "ReplicaSet"),
                "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"],
                "controller": True,
            }
        ]
    metadata.update(meta)
    return {"metadata": metadata, "status": {"conditions": []}}


def cache(ctl: ReplicaSetController, *objects: Any) -> None:
    for obj in objects:
        ctl.replicasets.indexer.upsert(f"{obj['metadata']['namespace']}/{obj['metadata']['name']}", obj)


def drained(ctl: ReplicaSetController) -> set[str]:
    keys = set()
    while (item := ctl.queue.get_nowait()) is not None:
        keys.add(item.key)
        ctl.queue.done(item)
    return keys


WEB = rs("web", "uid-web")
API = rs("api", "uid-api")


async def test_owned_pod_added_counts_as_observed_creation(ctl: ReplicaSetController) -> None:
    cache(ctl, WEB)
    ctl.expectations.expect_creations("ns/web", 2)
    PodEvents(ctl).on_add(pod("p1", {"app": "web"}, WEB), False)
    assert drained(ctl) == {"ns/web"}
    exp = ctl.expectations.get("ns/web")
    assert exp is not None and exp.adds == 1


async def test_pod_added_while_terminating_is_a_deletion(ctl: ReplicaSetController) -> None:
    cache(ctl, WEB)
    ctl.expectations.expect_deletions("ns/web", ["ns/p1"])
    PodEvents(ctl).on_add(pod("p1", {"app": "web"}, WEB, deletionTimestamp="2026-01-01T00:00:00Z"), False)
    assert drained(ctl) == {"ns/web"}
    assert ctl.expectations.satisfied("ns/web")


async def test_orphan_wakes_every_matching_replicaset(ctl: ReplicaSetController) -> None:
    everything = rs("all", "uid-all", selector={})
    elsewhere = rs("web", "uid-other", namespace="other")
    in_web = {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]}
    fe = rs("fe", "uid-fe", selector=in_web)
    cache(ctl, WEB, API, everything, elsewhere, fe)
    handler = PodEvents(ctl)
    handler.on_add(pod("orphan", {"app": "web"}), False)
    # An empty selector matches nothing here; other namespaces are not asked.
    assert drained(ctl) == {"ns/web", "ns/fe"}
    handler.on_add(pod("bare"), False)
    assert drained(ctl) == set()


async def test_unknown_owner_is_ignored(ctl: ReplicaSetController) -> None:
    cache(ctl, WEB)
    handler = PodEvents(ctl)
    handler.on_add(pod("stale-uid", {"app": "web"}, rs("web", "uid-old")), False)
    deployment = {"kind": "Deployment", "metadata": {"name": "web", "uid": "uid-web"}}
    handler.on_add(pod("wrong-kind", {"app": "web"}, deployment), False)
    assert drained(ctl) == set()


async def test_update_without_new_version_is_ignored(ctl: ReplicaSetController) -> None:
    cache(ctl, WEB)
    same = pod("p", {"app": "web"}, WEB, rv="5")
    PodEvents(ctl).on_update(same, same)
    assert drained(ctl) == set()


async def test_controller_ref_change_wakes_old_and_new_owner(ctl: ReplicaSetController) -> None:
    cache(ctl, WEB, API)
    PodEvents(ctl).on_update(pod("p", {"app": "web"}, WEB, rv="1"), pod("p", {"app": "web"}, API, rv="2"))
    assert drained(ctl) == {"ns/web", "ns/api"}


async def test_released_pod_with_new_labels_wakes_matching_replicasets(ctl: ReplicaSetController) -> None:
    cache(ctl, WEB, API)
    PodEvents(ctl).on_update(pod("p", {"app": "web"}, WEB, rv="1"), pod("p", {"app": "api"}, rv="2"))
    assert drained(ctl) == {"ns/web", "ns/api"}


async def test_becoming_ready_with_min_ready_seconds_requeues_later(ctl: ReplicaSetController) -> None:
    slow = rs("slow", "uid-slow", minReadySeconds=5)
    cache(ctl, slow)
    old = pod("p", {"app": "slow"}, slow, rv="1")
    new = pod("p", {"app": "slow"}, slow, rv="2")
    new["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    PodEvents(ctl).on_update(old, new)
    assert drained(ctl) == {"ns/slow"}
    assert ctl.queue.waiting == 1, "a second sync is scheduled after minReadySeconds + 1 s"


async def test_graceful_deletion_counts_as_deletion(ctl: ReplicaSetController) -> None:
    cache(ctl, WEB)
    ctl.expectations.expect_deletions("ns/web", ["ns/p"])
    old = pod("p", {"app": "web"}, WEB, rv="1")
    new = pod("p", {"app": "web", "x": "y"}, WEB, rv="2", deletionTimestamp="2026-01-01T00:00:00Z")
    PodEvents(ctl).on_update(old, new)
    assert drained(ctl) == {"ns/web"}
    assert ctl.expectations.satisfied("ns/web")


@pytest.mark.parametrize("tombstone", [False, True])
async def test_deleted_pod_is_observed_once(ctl: ReplicaSetController, tombstone: bool) -> None:
    cache(ctl, WEB)
    ctl.expectations.expect_deletions("ns/web", ["ns/p", "ns/q"])
    gone = pod("p", {"app": "web"}, WEB)
    event = DeletedFinalStateUnknown("ns/p", gone) if tombstone else gone
    handler = PodEvents(ctl)
    handler.on_delete(event)
    handler.on_delete(event)  # the same pod again (e.g. after its graceful-deletion update) counts once
    assert drained(ctl) == {"ns/web"}
    exp = ctl.expectations.get("ns/web")
    assert exp is not None and exp.deletes == 1
    handler.on_delete(pod("orphan", {"app": "web"}))
    assert drained(ctl) == set()


async def test_replicaset_recreated_or_deleted_drops_expectations(ctl: ReplicaSetController) -> None:
    handler = ReplicaSetEvents(ctl)
    ctl.expectations.expect_creations("ns/web", 3)
    handler.on_update(WEB, rs("web", "uid-new"))
    assert ctl.expectations.get("ns/web") is None
    assert drained(ctl) == {"ns/web"}

    ctl.expectations.expect_creations("ns/web", 3)
    handler.on_delete(DeletedFinalStateUnknown("ns/web", WEB))
    assert ctl.expectations.get("ns/web") is None
    assert drained(ctl) == {"ns/web"}
    handler.on_add(API, True)
    assert drained(ctl) == {"ns/api"}
    assert Request.from_key("ns/api").name == "api"
