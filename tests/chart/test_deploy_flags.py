"""The Helm chart and kustomize bases pass only flags the manager knows; kustomize renders."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from manager.cli.main import Flag, settings_class
from manager.cli.main import flags as flags_of
from manager.cli.plugins import discover


def flags() -> dict[str, Flag]:
    """The flags of this installation (the manager's and the installed controllers')."""
    return flags_of(settings_class(discover()))


ROOT = Path(__file__).resolve().parents[2]
FLAG = re.compile(r"^\s*-\s*--([a-z0-9-]+)(?:=|\s|$)", re.MULTILINE)


def _flags_in(path: Path) -> set[str]:
    return set(FLAG.findall(path.read_text()))


def test_chart_deployment_uses_only_known_flags() -> None:
    used = _flags_in(ROOT / "charts/aiokcm/templates/deployment.yaml")
    assert used, "the chart passes no flags at all"
    assert used <= set(flags()), f"unknown flags in the chart: {sorted(used - set(flags()))}"


def test_kustomize_deployment_uses_only_known_flags() -> None:
    used = _flags_in(ROOT / "config/manager/deployment.yaml")
    assert used <= set(flags()), f"unknown flags in config/manager: {sorted(used - set(flags()))}"


def test_chart_metadata_and_values_parse() -> None:
    chart = yaml.safe_load((ROOT / "charts/aiokcm/Chart.yaml").read_text())
    assert chart["apiVersion"] == "v2" and chart["name"] == "aiokcm"
    values = yaml.safe_load((ROOT / "charts/aiokcm/values.yaml").read_text())
    assert values["controllers"] == ["*"]
    assert values["port"] == flags()["port"].default


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed on this machine")
def test_kustomize_default_renders_namespaced_manager() -> None:
    out = subprocess.run(
        ["kubectl", "kustomize", str(ROOT / "config/default")], check=True, capture_output=True, text=True
    ).stdout
    docs = [d for d in yaml.safe_load_all(out) if d]
    kinds = {(d["kind"], d["metadata"]["name"]) for d in docs}
    assert ("Deployment", "aiokcm") in kinds
    assert ("ClusterRole", "aiokcm") in kinds
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    assert deployment["metadata"]["namespace"] == "aiokcm-system"
    probes = deployment["spec"]["template"]["spec"]["containers"][0]
    assert probes["readinessProbe"]["httpGet"]["path"] == "/readyz"
