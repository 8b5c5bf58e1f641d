"""The Pipeline custom resource (`pipelines.workflows.aiokcm.io`, v1, namespaced) as typed models; its CRD is
generated from them: `aiokcm crd controllers.pipeline:Pipeline` (checked in as
config/crd/pipelines.workflows.aiokcm.io.yaml and charts/aiokcm/crds/)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from controllers.pipeline.dag import validate
from manager import CustomResource, PrinterColumn

GROUP = "workflows.aiokcm.io"
VERSION = "v1"


class FreeObject(BaseModel):
    """An object kept as it is (`x-kubernetes-preserve-unknown-fields`): the API server validates it when the
    Job is created."""

    model_config = ConfigDict(extra="allow")


class JobTemplate(BaseModel):
    """A batch/v1 JobTemplateSpec: the metadata and spec of the step's Job."""

    metadata: FreeObject = Field(
        default_factory=FreeObject, description="Labels and annotations of the step's Job."
    )
    spec: FreeObject = Field(description="The step's Job spec (batch/v1 JobSpec).")


class PipelineStep(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    name: str = Field(
        min_length=1,
        max_length=63,
        pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
        description="The step's name, unique in the pipeline; its Job is <pipeline>-<step>.",
    )
    template: JobTemplate = Field(description="The Job the step runs.")
    depends_on: list[str] = Field(
        default_factory=list,
        alias="dependsOn",
        description="Steps that must succeed before this one starts.",
    )


class PipelineSpec(BaseModel):
    steps: list[PipelineStep] = Field(min_length=1, description="The steps, each a Job.")

    @model_validator(mode="after")
    def acyclic(self) -> PipelineSpec:
        """Unique names, known dependencies, no cycle: what the CRD schema cannot say."""
        problem = validate(self.graph(), [step.name for step in self.steps])
        if problem:
            raise ValueError(problem)
        return self

    def graph(self) -> dict[str, list[str]]:
        """Step name → the names it depends on, in declaration order."""
        return {step.name: list(step.depends_on) for step in self.steps}

    def step(self, name: str) -> PipelineStep:
        return next(step for step in self.steps if step.name == name)


class StepStatus(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    name: str
    phase: str = Field(description="Pending, Running, Succeeded or Failed.")
    job_name: str | None = Field(None, alias="jobName", description="The step's Job, once created.")
    message: str | None = Field(None, description="Why the step failed.")


class PipelineStatus(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    observed_generation: int | None = Field(
        None, alias="observedGeneration", description="The generation this status describes."
    )
    phase: str | None = Field(None, description="Pending, Running, Succeeded or Failed.")
    steps: list[StepStatus] = Field(default_factory=list, description="Each step's phase.")
    conditions: list[dict[str, Any]] = Field(
        default_factory=list, description="Succeeded, Failed and Invalid (metav1.Condition)."
    )


class Pipeline(CustomResource):
    """A DAG of Jobs: each step's Job starts once the steps it depends on have succeeded."""

    group = GROUP
    version = VERSION
    kind = "Pipeline"
    short_names = ("pl",)
    categories = ("aiokcm",)
    printer_columns = (
        PrinterColumn("Phase", "string", ".status.phase"),
        PrinterColumn("Succeeded", "string", '.status.conditions[?(@.type=="Succeeded")].status'),
        PrinterColumn("Age", "date", ".metadata.creationTimestamp"),
    )
    spec: PipelineSpec
    status: PipelineStatus | None = None


PIPELINES = Pipeline.gvr()
