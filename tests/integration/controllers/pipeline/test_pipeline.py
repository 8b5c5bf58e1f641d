"""The Pipeline controller end to end against kubesim, with the Job controller running the steps' Jobs and
the garbage collector deleting them with their Pipeline."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.pipeline import PIPELINE_LABEL, PIPELINES, STEP_LABEL, Pipeline, PipelineController
from controllers.pipeline.controller import JobConflict
from controllers.ttlafterfinished import TTLAfterFinishedController
from manager import EVENTS, JOBS, PODS
from manager.testing import controller_of, wait_for
from tests.integration.controllers.garbagecollector.harness import QuickGarbageCollector
from tests.integration.controllers.job.harness import FastJobController
from tests.integration.controllers.pipeline.harness import (
    NS,
    absent,
    condition,
    get_pipeline,
    pipeline,
    pipeline_env,
    step,
    wait_condition,
)

DIAMOND = (step("fetch"), step("build", "fetch"), step("test", "fetch"), step("publish", "build", "test"))


def job_complete(job: dict[str, Any] | None) -> bool:
    return job is not None and any(
        c.get("type") == "Complete" and c.get("status") == "True"
        for c in (job.get("status") or {}).get("conditions") or ()
    )


class Recorder:
    """An inline handler on the shared Jobs informer: when each Job appears, whether the Jobs of the steps
    it depends on had completed, as the cache (applying the watch in order) saw it at that moment."""

    def __init__(self, ctl: PipelineController, deps: dict[str, list[str]]) -> None:
        self.ctl = ctl
        self.deps = deps
        self.created: list[str] = []
        self.deps_done: dict[str, bool] = {}

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        labels = obj["metadata"].get("labels") or {}
        step_name = labels.get(STEP_LABEL)
        if step_name is None:
            return
        self.created.append(step_name)
        prefix = labels[PIPELINE_LABEL]
        self.deps_done[step_name] = all(
            job_complete(self.ctl.jobs.get_by_key(f"{NS}/{prefix}-{dep}")) for dep in self.deps[step_name]
        )

    def on_update(self, old: Any, new: Any) -> None:
        pass

    def on_delete(self, obj: Any) -> None:
        pass


async def test_a_diamond_runs_in_dependency_order_and_succeeds() -> None:
    async with pipeline_env() as env:
        ctl = controller_of(env.manager, PipelineController)
        recorder = Recorder(ctl, {s["name"]: s.get("dependsOn", []) for s in DIAMOND})
        ctl.informer(JOBS).add_event_handler(recorder, inline=True)
        await env.client.create(PIPELINES, pipeline("ci", *DIAMOND), NS)
        done = await wait_condition(env.client, "ci", "Succeeded", "True")

        assert sorted(recorder.created) == ["build", "fetch", "publish", "test"]
        assert recorder.created[0] == "fetch" and recorder.created[-1] == "publish"
        assert recorder.deps_done == dict.fromkeys(recorder.created, True)
        status = done["status"]
        assert status["phase"] == "Succeeded"
        assert status["observedGeneration"] == done["metadata"]["generation"]
        assert [(s["name"], s["phase"], s["jobName"]) for s in status["steps"]] == [
            ("fetch", "Succeeded", "ci-fetch"),
            ("build", "Succeeded", "ci-build"),
            ("test", "Succeeded", "ci-test"),
            ("publish", "Succeeded", "ci-publish"),
        ]
        failed = condition(done, "Failed")
        assert failed is not None and failed["status"] == "False"

        job = await env.client.get(JOBS, "ci-build", NS)
        assert job["metadata"]["labels"] == {"team": "ci", PIPELINE_LABEL: "ci", STEP_LABEL: "build"}
        (ref,) = job["metadata"]["ownerReferences"]
        assert ref["kind"] == "Pipeline" and ref["uid"] == done["metadata"]["uid"]
        assert ref["controller"] is True and ref["blockOwnerDeletion"] is True
        jobs = (await env.client.list(JOBS, NS))["items"]
        assert len(jobs) == 4  # one Job per step, never a duplicate


async def test_a_failing_step_fails_the_pipeline_and_nothing_after_it_starts() -> None:
    async with pipeline_env() as env:
        steps = (
            step("fetch"),
            step("build", "fetch", exit_code=1, backoff_limit=0),
            step("publish", "build"),
        )
        await env.client.create(PIPELINES, pipeline("broken", *steps), NS)
        failed = await wait_condition(env.client, "broken", "Failed", "True")
        cond = condition(failed, "Failed")
        assert cond is not None and cond["reason"] == "StepFailed"
        assert cond["message"].startswith("step build failed")
        succeeded = condition(failed, "Succeeded")
        assert succeeded is not None and succeeded["status"] == "False"
        phases = {s["name"]: s["phase"] for s in failed["status"]["steps"]}
        assert phases == {"fetch": "Succeeded", "build": "Failed", "publish": "Pending"}
        assert failed["status"]["phase"] == "Failed"
        # reconciling again (a touch of the labels) still starts nothing
        poked = await env.client.patch(PIPELINES, "broken", {"metadata": {"labels": {"poke": "1"}}}, NS)
        ctl = controller_of(env.manager, PipelineController)

        def reconciled() -> bool:
            cached = ctl.lister(PIPELINES).get_by_key(f"{NS}/broken")
            seen = (
                cached is not None
                and cached["metadata"]["resourceVersion"] == poked["metadata"]["resourceVersion"]
            )
            return seen and len(ctl.queue) == 0 and not ctl.queue.processing

        await wait_for(reconciled, message="the touched Pipeline reconciled")
        assert await absent(env.client, JOBS, "broken-publish")


async def test_a_cycle_is_invalid_and_creates_nothing() -> None:
    async with pipeline_env() as env:
        steps = (step("a", "c"), step("b", "a"), step("c", "b"), step("d"))
        await env.client.create(PIPELINES, pipeline("loop", *steps), NS)
        invalid = await wait_condition(env.client, "loop", "Invalid", "True")
        cond = condition(invalid, "Invalid")
        assert cond is not None and cond["reason"] == "InvalidSpec"
        assert "dependency cycle: a -> c -> b -> a" in cond["message"]

        async def warning() -> list[dict[str, Any]]:
            events = (await env.client.list(EVENTS, NS))["items"]
            return [e for e in events if e.get("reason") == "InvalidSpec" and e.get("type") == "Warning"]

        assert len(await wait_for(warning, message="the Warning event")) == 1
        assert (await env.client.list(JOBS, NS))["items"] == []  # not even the independent step d


async def test_an_unknown_dependency_is_invalid_then_a_fix_runs_it() -> None:
    async with pipeline_env() as env:
        await env.client.create(PIPELINES, pipeline("typo", step("a"), step("b", "aa")), NS)
        invalid = await wait_condition(env.client, "typo", "Invalid", "True")
        cond = condition(invalid, "Invalid")
        assert cond is not None and "step 'b' depends on unknown step 'aa'" in cond["message"]
        assert (await env.client.list(JOBS, NS))["items"] == []
        fixed = {"spec": {"steps": [step("a"), step("b", "a")]}}
        await env.client.patch(PIPELINES, "typo", fixed, NS, patch_type="merge")
        done = await wait_condition(env.client, "typo", "Succeeded", "True")
        assert condition(done, "Invalid") is None  # the toolkit clears it


async def test_a_spec_change_bumps_observed_generation() -> None:
    async with pipeline_env() as env:
        created = await env.client.create(PIPELINES, pipeline("gen", step("a", seconds=0.1)), NS)
        await wait_condition(env.client, "gen", "Succeeded", "True")
        obj = await get_pipeline(env.client, "gen")
        assert obj["status"]["observedGeneration"] == created["metadata"]["generation"]
        more = {"spec": {"steps": [step("a", seconds=0.1), step("b", "a", seconds=0.1)]}}
        patched = await env.client.patch(PIPELINES, "gen", more, NS, patch_type="merge")
        generation = patched["metadata"]["generation"]
        assert generation > created["metadata"]["generation"]

        async def observed() -> dict[str, Any] | None:
            obj = await get_pipeline(env.client, "gen")
            cond = condition(obj, "Succeeded")
            ok = obj["status"]["observedGeneration"] == generation and cond and cond["status"] == "True"
            return obj if ok and cond and cond.get("observedGeneration") == generation else None

        obj = await wait_for(observed, timeout=15, message="the new generation observed and succeeded")
        assert [s["name"] for s in obj["status"]["steps"]] == ["a", "b"]
        assert (await env.client.get(JOBS, "gen-b", NS))["metadata"]["labels"][STEP_LABEL] == "b"


async def test_deleting_the_pipeline_deletes_its_jobs_and_pods() -> None:
    async with pipeline_env() as env:
        await env.client.create(PIPELINES, pipeline("gone", step("a", seconds=30), step("b")), NS)

        async def pods() -> list[dict[str, Any]]:
            items = (await env.client.list(PODS, NS))["items"]
            return [
                p
                for p in items
                if (p["metadata"].get("labels") or {}).get("job-name") in ("gone-a", "gone-b")
            ]

        await wait_for(lambda: pods(), message="the steps' pods")
        await env.client.delete(PIPELINES, "gone", NS)

        async def all_gone() -> bool:
            jobs = [
                j
                for j in (await env.client.list(JOBS, NS))["items"]
                if j["metadata"]["name"].startswith("gone-")
            ]
            return not jobs and not await pods()

        await wait_for(all_gone, timeout=15, message="the Jobs and pods deleted with their Pipeline")


async def test_the_jobs_informer_is_shared_with_the_job_controller() -> None:
    controllers = (PipelineController, FastJobController, TTLAfterFinishedController, QuickGarbageCollector)
    async with pipeline_env(*controllers) as env:
        gc = controller_of(env.manager, QuickGarbageCollector)
        await wait_for(gc.is_synced, message="the garbage collector's monitors")
        cluster = env.manager.cluster
        assert cluster is not None
        informers = cluster.factory.informers()
        resources = [informer.gvr for informer in informers]
        assert len(resources) == len(set(resources))  # each resource once, Jobs included
        by_resource = {informer.gvr: informer for informer in informers}
        assert not by_resource[JOBS].metadata_only  # the Job controller's full, unselected Jobs watch
        assert PIPELINES in by_resource
        pipeline_ctl = controller_of(env.manager, PipelineController)
        job_ctl = controller_of(env.manager, FastJobController)
        assert pipeline_ctl.informer(JOBS) is job_ctl.informer(JOBS) is by_resource[JOBS]


async def test_a_create_that_meets_an_existing_job_never_duplicates_it() -> None:
    async with pipeline_env() as env:
        await env.client.create(PIPELINES, pipeline("again", step("a", seconds=0.1)), NS)
        await wait_condition(env.client, "again", "Succeeded", "True")
        ctl = controller_of(env.manager, PipelineController)
        typed = ctl.typed_lister(Pipeline).get(NS, "again")
        assert typed is not None
        # what a reconcile on a cache that has not seen its own Job yet does: create, meet AlreadyExists
        existing = await ctl._create_job(typed, "a")
        assert isinstance(existing, dict) and existing["metadata"]["name"] == "again-a"
        jobs = (await env.client.list(JOBS, NS))["items"]
        assert [j["metadata"]["name"] for j in jobs] == ["again-a"]
        # a Job of that name that another object controls is not adopted: the reconcile fails and retries
        await env.client.create(PIPELINES, pipeline("other", step("a", seconds=0.1)), NS)
        other = await wait_for(lambda: ctl.typed_lister(Pipeline).get(NS, "other"), message="other cached")
        renamed = Pipeline.from_object({**other.raw, "metadata": {**other.raw["metadata"], "name": "again"}})
        with pytest.raises(JobConflict, match="again-a exists"):
            await ctl._create_job(renamed, "a")


async def test_a_job_the_api_server_rejects_fails_its_step_until_the_spec_changes() -> None:
    async with pipeline_env() as env:
        bad = step("a")
        bad["template"]["spec"]["parallelism"] = -1
        await env.client.create(PIPELINES, pipeline("rejected", bad, step("b", "a")), NS)
        failed = await wait_condition(env.client, "rejected", "Failed", "True")
        cond = condition(failed, "Failed")
        assert cond is not None and cond["message"].startswith(
            "step a failed: the API server rejected Job rejected-a: 422 Invalid"
        )
        assert (await env.client.list(JOBS, NS))["items"] == []
        fixed = {"spec": {"steps": [step("a", seconds=0.1), step("b", "a", seconds=0.1)]}}
        await env.client.patch(PIPELINES, "rejected", fixed, NS, patch_type="merge")
        done = await wait_condition(env.client, "rejected", "Succeeded", "True")
        failure = condition(done, "Failed")
        assert failure is not None and failure["status"] == "False"
