"""The Helm chart and kustomize bases pass only flags the manager knows."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from manager.cli.flags import Flag, settings_class
from manager.cli.flags import flags as flags_of
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
    assert values["securePort"] == flags()["secure-port"].default
