"""What ships for the Pipeline controller: the CRD in config/crd/ and the chart is exactly the generator's
output (drift fails here), the ClusterRoles grant what the controller declares, the sample is valid."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from controllers.pipeline import Pipeline, PipelineController
from manager.cli.main import main

ROOT = Path(__file__).resolve().parents[4]
CRD_NAME = "pipelines.workflows.aiokcm.io.yaml"


@pytest.fixture
def generated(capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["crd", "controllers.pipeline:Pipeline"]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("where", ["config/crd", "charts/aiokcm/crds"])
def test_the_checked_in_crd_is_the_generated_one(generated: str, where: str) -> None:
    shipped = (ROOT / where / CRD_NAME).read_text()
    assert shipped == generated, f"regenerate: aiokcm crd controllers.pipeline:Pipeline > {where}/{CRD_NAME}"


def test_kustomize_lists_the_crd() -> None:
    kustomization = yaml.safe_load((ROOT / "config/crd/kustomization.yaml").read_text())
    assert CRD_NAME in kustomization["resources"]


def _granted(rules: list[dict[str, Any]], group: str, resource: str, verb: str) -> bool:
    return any(
        (group in r["apiGroups"] or "*" in r["apiGroups"])
        and (resource in r["resources"] or "*" in r["resources"])
        and (verb in r["verbs"] or "*" in r["verbs"])
        for r in rules
    )


def test_the_charts_rbac_grants_what_the_controller_declares() -> None:
    # The chart renders the pipeline-controller's ClusterRole from this entry when `controllers` enables it.
    data = yaml.safe_load((ROOT / "charts/aiokcm/files/rbac.yaml").read_text())
    (entry,) = [c for c in data["controllers"] if c["name"] == PipelineController.name]
    assert entry["enabledByDefault"] is False
    missing = [
        (group, resource, verb)
        for rule in PipelineController.rbac
        for group in rule.api_groups
        for resource in rule.resources
        for verb in rule.verbs
        if not _granted(entry["rules"], group, resource, verb)
    ]
    assert not missing, f"the chart lacks {missing}"


def test_the_sample_is_a_valid_pipeline() -> None:
    sample = yaml.safe_load((ROOT / "config/samples/pipeline.yaml").read_text())
    pipeline = Pipeline.from_object(sample)
    assert pipeline.spec.graph() == {
        "fetch": [],
        "build": ["fetch"],
        "test": ["fetch"],
        "publish": ["build", "test"],
    }
