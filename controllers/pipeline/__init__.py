"""The Pipeline controller (`pipeline-controller`, alias `pipeline`, off by default), registered through the
`aiokcm.controllers` entry point `pipeline-controller = "controllers.pipeline:PipelineController"`; its
custom resource is `Pipeline` (`aiokcm crd controllers.pipeline:Pipeline` prints the CRD)."""

from controllers.pipeline.controller import PIPELINE_LABEL, STEP_LABEL, PipelineController
from controllers.pipeline.types import PIPELINES, Pipeline, PipelineSpec, PipelineStep

__all__ = [
    "PIPELINES",
    "PIPELINE_LABEL",
    "STEP_LABEL",
    "Pipeline",
    "PipelineController",
    "PipelineSpec",
    "PipelineStep",
]
