"""The Pipeline controller (`pipeline-controller`, alias `pipeline`, off by default): runs a Pipeline's steps
as Jobs in dependency order, the worked example of typed custom resources and the operator toolkit.

For each Pipeline it reads its Jobs from the cache it shares with the Job controller (the same unselected
Jobs informer, `Owns(JOBS)`: a Job's events enqueue its controller Pipeline), and:

- creates the Job `<pipeline>-<step>` of every step whose dependencies have all succeeded (labels naming the
  pipeline and step, a controller owner reference to the Pipeline with blockOwnerDeletion, so deleting the
  Pipeline deletes its Jobs through the garbage collector); no new Job once a step failed, nor while the
  Pipeline is being deleted;
- writes each step's phase (Pending: not started; Running: its Job exists and has not finished; Succeeded /
  Failed: the Job's Complete / Failed condition), the Pipeline's phase, `observedGeneration` and the
  `Succeeded` and `Failed` conditions (metav1.Condition semantics, see `status.py`).

A spec the model rejects (a duplicate step name, a dependency on an unknown step, a dependency cycle, as
well as anything the CRD schema cannot say) gets the toolkit's `Invalid` condition (status True, reason
`InvalidSpec`, the message naming the problem) and one Warning event; nothing is created and the key is not
retried until the Pipeline changes (`InvalidObject` is a TerminalError).

Job names are deterministic, so a stale cache can never duplicate a Job: a create that meets AlreadyExists
reads the Job from the API server and goes on with it (a Job of that name that the Pipeline does not control
is an error, retried with backoff: typically the Job of a deleted Pipeline of the same name, about to go).
A step once recorded Succeeded in status keeps its phase if its Job is deleted; it is not re-run. A Job the
API server rejects (an invalid template) fails its step, with the server's message and a Warning event; the
step is tried again only once the spec changes (a new generation).
"""

from __future__ import annotations

import time
from functools import cached_property
from typing import Any

from controllers.pipeline.dag import FAILED, PENDING, SUCCEEDED, ready_steps
from controllers.pipeline.status import job_phase, pipeline_status
from controllers.pipeline.types import GROUP, PIPELINES, Pipeline
from manager import (
    JOBS,
    AlreadyExists,
    Controller,
    For,
    Invalid,
    Lister,
    NotFound,
    Owns,
    PolicyRule,
    Request,
    controller_owner,
    patch_status,
    set_controller_reference,
)

Obj = dict[str, Any]

PIPELINE_LABEL = "workflows.aiokcm.io/pipeline"
STEP_LABEL = "workflows.aiokcm.io/step"


class JobConflict(RuntimeError):
    """A Job with a step's name exists and the Pipeline does not control it (retried with backoff)."""


class PipelineController(Controller):
    name = "pipeline-controller"
    aliases = ("pipeline",)
    enabled_by_default = False
    concurrency = 2
    # Each verb is a call it makes (the event sender's rules are the manager's, not repeated here).
    rbac = (
        PolicyRule((GROUP,), ("pipelines",), ("list", "watch")),
        PolicyRule((GROUP,), ("pipelines/status",), ("patch",)),
        PolicyRule((GROUP,), ("pipelines/finalizers",), ("update",)),  # blockOwnerDeletion on its Jobs
        PolicyRule(("batch",), ("jobs",), ("get", "list", "watch", "create")),
    )
    # Owns(JOBS): the Job controller's unselected, full Jobs informer, shared (one watch for both).
    watches = (For(PIPELINES), Owns(JOBS))

    @cached_property
    def jobs(self) -> Lister:
        return self.lister(JOBS)

    async def reconcile(self, request: Request) -> None:
        pipeline = await self.get_typed(Pipeline, request)  # InvalidObject: reported, not retried
        if pipeline is None:
            return None
        uid = pipeline.metadata.uid
        recorded = {s.name: s for s in (pipeline.status.steps if pipeline.status else [])}
        same_generation = pipeline.status is not None and (
            pipeline.status.observed_generation == pipeline.metadata.generation
        )
        graph = pipeline.spec.graph()
        jobs: dict[str, Obj] = {}
        phases: dict[str, str] = {}
        messages: dict[str, str] = {}
        for step in graph:
            job = self._owned_job(request.namespace, self.job_name(pipeline, step), uid)
            if job is not None:
                jobs[step] = job
                phases[step], messages[step] = job_phase(job)
            elif step in recorded and (
                recorded[step].phase == SUCCEEDED or (recorded[step].phase == FAILED and same_generation)
            ):  # its Job was deleted, or never accepted (retried once the spec changes): the outcome stays
                phases[step] = recorded[step].phase
                messages[step] = recorded[step].message or ""
            else:
                phases[step] = PENDING
        if not pipeline.metadata.deletion_timestamp:
            for step in ready_steps(graph, phases):
                created = await self._create_job(pipeline, step)
                if isinstance(created, str):  # the API server rejected the Job: the step fails
                    phases[step], messages[step] = FAILED, created
                    self.recorder.event(pipeline.raw, "Warning", "FailedCreate", created)
                    break  # no new step after a failure
                jobs[step] = created
                phases[step], messages[step] = job_phase(created)
        status = pipeline_status(
            pipeline,
            phases,
            messages,
            {step: job["metadata"]["name"] for step, job in jobs.items()},
            time.time(),
        )
        if status is not None:
            try:
                await patch_status(self.client, PIPELINES, pipeline.raw, status)
            except NotFound:
                return None
        return None

    @staticmethod
    def job_name(pipeline: Pipeline, step: str) -> str:
        return f"{pipeline.metadata.name}-{step}"

    def _owned_job(self, namespace: str | None, name: str, uid: str | None) -> Obj | None:
        job = self.jobs.get_by_key(f"{namespace}/{name}")
        if job is None:
            return None
        owner = controller_owner(job)
        return job if owner is not None and owner.get("uid") == uid else None

    def job_for(self, pipeline: Pipeline, step: str) -> Obj:
        """The Job of `step`: its template with the pipeline's labels and a controller reference."""
        template = pipeline.spec.step(step).template
        meta = template.metadata.model_dump(by_alias=True)
        labels = {**(meta.get("labels") or {}), PIPELINE_LABEL: pipeline.metadata.name, STEP_LABEL: step}
        metadata: Obj = {
            "name": self.job_name(pipeline, step),
            "namespace": pipeline.metadata.namespace,
            "labels": labels,
        }
        if meta.get("annotations"):
            metadata["annotations"] = dict(meta["annotations"])
        job: Obj = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": metadata,
            "spec": template.spec.model_dump(by_alias=True),
        }
        set_controller_reference(pipeline.raw, job)  # blockOwnerDeletion: True
        return job

    async def _create_job(self, pipeline: Pipeline, step: str) -> Obj | str:
        """The created (or already existing, owned) Job; the API server's message when it rejects it."""
        job = self.job_for(pipeline, step)
        name, namespace = job["metadata"]["name"], job["metadata"]["namespace"]
        try:
            created: Obj = await self.client.create(JOBS, job, namespace)
        except AlreadyExists:  # created earlier, not in the cache yet (or someone else's)
            existing: Obj = await self.client.get(JOBS, name, namespace)
            owner = controller_owner(existing)
            if owner is None or owner.get("uid") != pipeline.metadata.uid:
                owned_by = pipeline.metadata.name
                who = f"Job {namespace}/{name} exists and Pipeline {owned_by} does not control it"
                raise JobConflict(who) from None
            return existing
        except Invalid as exc:
            return f"the API server rejected Job {name}: {exc}"
        self.log.info("step job created", pipeline=pipeline.metadata.name, step=step, job=name)
        self.recorder.event(pipeline.raw, "Normal", "StepStarted", f"step {step} started: Job {name}")
        return created
