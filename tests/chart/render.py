"""Rendering the chart with Helm itself, offline: `helm-python-sdk` (a `test` extra) ships Helm's Go SDK as a
native library for linux x86_64 and renders a chart directory as `helm template` does, applying
values.schema.json and the templates' `fail`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

CHART = Path(__file__).resolve().parents[2] / "charts" / "aiokcm"
RELEASE, NAMESPACE = "demo", "platform"


def render(values: dict[str, Any] | None = None) -> dict[str, str]:
    """Template path (e.g. `aiokcm/templates/rbac.yaml`) → rendered text. Raises helm_python.HelmError."""
    import helm_python

    with helm_python.Chart.load(str(CHART)) as chart:
        rendered: dict[str, str] = chart.render(values or {}, name=RELEASE, namespace=NAMESPACE)
    return rendered


def manifests(values: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The rendered Kubernetes objects (NOTES.txt left out)."""
    return [
        document
        for path, text in sorted(render(values).items())
        if path.endswith(".yaml")
        for document in yaml.safe_load_all(text)
        if document
    ]


def one(documents: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (found,) = [d for d in documents if d["kind"] == kind]
    return found
