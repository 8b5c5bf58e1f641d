"""The TTL-after-finished controller's decisions: which Jobs count, when they expire, and the fresh re-check
before a delete."""

from __future__ import annotations

import importlib.metadata
from typing import Any

import pytest
import structlog
from prometheus_client import REGISTRY

from controllers.ttlafterfinished import TTLAfterFinishedController
from controllers.ttlafterfinished.controller import JobEvents, TTLAfterFinishedFlags
from controllers.ttlafterfinished.ttl import Expiry, FinishTimeUnknown, expiry, is_candidate, needs_cleanup
from manager import JOBS, ControllerContext, NotFound, Request, Result
from manager.config.settings import Settings

FINISHED = "2024-01-01T00:00:00Z"
FINISHED_AT = 1_704_067_200.0
METRIC = "ttl_after_finished_controller_job_deletion_duration_seconds_count"


def job(ttl: Any = 60, ctype: str = "Complete", status: str = "True", **meta: Any) -> dict[str, Any]:
    spec = {} if ttl is None else {"ttlSecondsAfterFinished": ttl}
    cond = {"type": ctype, "status": status, "lastTransitionTime": FINISHED}
    return {
        "metadata": {"name": "j", "namespace": "ns", "uid": "u1", **meta},
        "spec": spec,
        "status": {"conditions": [{"type": "SuccessCriteriaMet", "status": "True"}, cond]},
    }


def make() -> TTLAfterFinishedController:
    ctx = ControllerContext(
        settings=Settings.with_flags([TTLAfterFinishedFlags])(), health=None, logger=structlog.get_logger()
    )
    return TTLAfterFinishedController(ctx)


def test_registered_entry_point_and_queue() -> None:
    eps = {ep.name: ep.value for ep in importlib.metadata.entry_points(group="aiokcm.controllers")}
    assert eps["ttl-after-finished-controller"] == "controllers.ttlafterfinished:TTLAfterFinishedController"
    ctl = make()
    assert ctl.workers() == 5 and ctl.workqueue_name() == "ttl_jobs_to_delete"
    assert TTLAfterFinishedController.aliases == ("ttl-after-finished",)


def test_finished_jobs_with_a_ttl_are_candidates() -> None:
    assert needs_cleanup(job()) and needs_cleanup(job(ctype="Failed")) and needs_cleanup(job(ttl=0))
    assert not needs_cleanup(job(ttl=None))
    assert not needs_cleanup(job(status="False"))
    assert not needs_cleanup(job(ctype="FailureTarget"))
    assert not is_candidate(job(deletionTimestamp=FINISHED))


def test_expiry_is_the_finishing_condition_time_plus_the_ttl() -> None:
    assert expiry(job(ttl=60)) == Expiry(FINISHED_AT, FINISHED_AT + 60)
    unknown = job()
    unknown["status"]["conditions"][1]["lastTransitionTime"] = None
    with pytest.raises(FinishTimeUnknown, match="ns/j"):
        expiry(unknown)


def test_check_expired_waiting_and_finished_in_the_future() -> None:
    ctl = make()
    ctl.now = lambda: FINISHED_AT + 61
    assert ctl.check(job(ttl=60)) == Expiry(FINISHED_AT, FINISHED_AT + 60)
    ctl.now = lambda: FINISHED_AT + 20
    assert ctl.check(job(ttl=60)) == Result(requeue_after=40)
    ctl.now = lambda: FINISHED_AT - 10  # clock skew: logged, and the whole TTL still waited for
    assert ctl.check(job(ttl=60)) == Result(requeue_after=70)
    assert ctl.check(job(ttl=None)) is None


async def test_the_handler_queues_only_candidates() -> None:
    ctl = make()
    events = JobEvents(ctl)
    events.on_add(job(ttl=None), True)
    events.on_update(job(), job(deletionTimestamp=FINISHED))
    assert len(ctl.queue) == 0
    events.on_update(job(status="False"), job())
    assert len(ctl.queue) == 1


class FakeClient:
    def __init__(self, fresh: dict[str, Any] | None) -> None:
        self.fresh = fresh
        self.deletes: list[tuple[Any, ...]] = []

    async def get(self, gvr: Any, name: str, namespace: str) -> dict[str, Any]:
        if self.fresh is None:
            raise NotFound(404, "NotFound")
        return self.fresh

    async def delete(self, gvr: Any, name: str, namespace: str, **options: Any) -> dict[str, Any]:
        self.deletes.append((gvr, name, namespace, options))
        return {}


def with_cache(
    cached: dict[str, Any], fresh: dict[str, Any] | None
) -> tuple[TTLAfterFinishedController, FakeClient]:
    ctl = make()
    client = FakeClient(fresh)
    ctl.ctx.client = client  # type: ignore[assignment]
    ctl.__dict__["jobs"] = type("Cache", (), {"get_by_key": staticmethod(lambda key: cached)})()
    ctl.now = lambda: FINISHED_AT + 100
    return ctl, client


async def test_an_expired_job_is_read_fresh_then_deleted_in_the_foreground() -> None:
    ctl, client = with_cache(job(ttl=60), job(ttl=60, uid="u2"))
    before = REGISTRY.get_sample_value(METRIC) or 0.0
    assert await ctl.reconcile(Request("ns", "j")) is None
    assert client.deletes == [
        (JOBS, "j", "ns", {"propagation_policy": "Foreground", "preconditions": {"uid": "u2"}})
    ]
    assert REGISTRY.get_sample_value(METRIC) == before + 1


async def test_a_ttl_raised_since_the_cache_saw_the_job_wins() -> None:
    ctl, client = with_cache(job(ttl=60), job(ttl=3600))
    assert await ctl.reconcile(Request("ns", "j")) == Result(requeue_after=3500)
    assert client.deletes == []

    ctl, client = with_cache(job(ttl=60), None)  # deleted meanwhile
    assert await ctl.reconcile(Request("ns", "j")) is None
    assert client.deletes == []
