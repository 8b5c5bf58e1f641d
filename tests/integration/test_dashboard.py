"""The Grafana dashboard (charts/aiokcm/dashboards/aiokcm.json) queries only metrics the manager exports.

A manager with the Job and ReplicaSet controllers runs against kubesim with leader election and a client rate
limit on (so that their series exist too), reconciles a Job and a ReplicaSet, and its /metrics is scraped.
Every PromQL expression of the dashboard (panel targets and variable queries) is parsed for the metric names
and labels it uses: each name must be exported (a histogram's _bucket/_count/_sum samples included), and
each label it filters, groups or names in a legend must be on the series of that metric.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from controllers.job import JobController
from controllers.replicaset import ReplicaSetController
from kubesim import KubeSim
from manager import JOBS, REPLICASETS
from manager.client.rest import create_client
from manager.testing import run_manager
from tests.helpers import wait_for
from tests.integration.controllers.job.harness import job_manifest
from tests.integration.controllers.replicaset.harness import NS, rs_manifest

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "charts/aiokcm/dashboards/aiokcm.json"
# Labels Prometheus adds to every scraped series, and the bucket bound of histograms.
TARGET_LABELS = {"instance", "job", "le"}
_KEYWORDS = {
    "and",
    "or",
    "unless",
    "bool",
    "offset",
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
}
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')
_SELECTOR = re.compile(r"\{([^}]*)\}")
_MATCHER_LABEL = re.compile(r"([A-Za-z_]\w*)\s*(?:=~|!~|!=|=)")
_RANGE = re.compile(r"\[[^\]]*\]")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)")
_IDENTIFIER = re.compile(r"(?<![\w.$])([A-Za-z_:][\w:]*)(\s*\()?")
_LABEL_VALUES = re.compile(r"^\s*label_values\((.*),\s*(\w+)\s*\)\s*$")
_LEGEND_LABEL = re.compile(r"\{\{\s*(\w+)\s*\}\}")


def promql_names(expression: str) -> tuple[set[str], set[str]]:
    """(metric names, label names) an expression uses: identifiers that are not functions, keywords, label
    names (in selectors and grouping clauses) nor durations."""
    labels: set[str] = set()
    text = _STRING.sub('""', expression)

    def selector(match: re.Match[str]) -> str:
        labels.update(_MATCHER_LABEL.findall(match[1]))
        return " "

    def grouping(match: re.Match[str]) -> str:
        labels.update(name.strip() for name in match[1].split(",") if name.strip())
        return " "

    text = _SELECTOR.sub(selector, text)
    text = _GROUPING.sub(grouping, _RANGE.sub(" ", text))
    text = re.sub(r"\$\w+", " ", text)
    metrics = {match[1] for match in _IDENTIFIER.finditer(text) if not match[2] and match[1] not in _KEYWORDS}
    return metrics, labels


def test_promql_names_are_parsed() -> None:
    expression = (
        'histogram_quantile(0.99, sum by (verb, le) (rate(a_seconds_bucket{instance=~"$i", x!="}"}'
        "[$__rate_interval]))) / on (verb) group_left count(b_total offset 5m) and c == bool 1e3"
    )
    assert promql_names(expression) == ({"a_seconds_bucket", "b_total", "c"}, {"verb", "le", "instance", "x"})


def dashboard_queries(dashboard: dict[str, Any]) -> Iterator[tuple[str, str, set[str]]]:
    """(where, expression, labels its legend names) for every query of the dashboard."""

    def panels(items: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        for panel in items:
            yield panel
            yield from panels(panel.get("panels", []))

    for panel in panels(dashboard["panels"]):
        for target in panel.get("targets", []):
            legend = set(_LEGEND_LABEL.findall(target.get("legendFormat", "")))
            yield f"panel {panel['title']!r}", target["expr"], legend
    for variable in dashboard["templating"]["list"]:
        query = variable.get("query")
        text = query.get("query", "") if isinstance(query, dict) else ""
        found = _LABEL_VALUES.match(text)
        if found:
            yield f"variable {variable['name']!r}", found[1], {found[2]}


def exported(exposition: str) -> tuple[set[str], dict[str, set[str]]]:
    """The sample names the exposition can hold (a histogram's _bucket/_count/_sum, declared or sampled)
    and the labels seen on each sample name."""
    names: set[str] = set()
    labels: dict[str, set[str]] = {}
    for line in exposition.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            names.add(name)
            suffixes = {"histogram": ("_bucket", "_count", "_sum"), "summary": ("_count", "_sum")}
            names.update(name + suffix for suffix in suffixes.get(kind, ()))
        elif line and not line.startswith("#"):
            name, _, rest = line.partition("{")
            name = name.split()[0]
            names.add(name)
            found = set(re.findall(r'(\w+)="', rest.partition("}")[0])) if rest else set()
            labels.setdefault(name, set()).update(found)
    return names, labels


@pytest.fixture
async def exposition(kubesim: KubeSim) -> str:
    client = await create_client(master=kubesim.url, qps=0)
    flags = {"leader_elect": True, "kube_api_qps": 100, "kube_api_burst": 200}
    try:
        async with run_manager(kubesim.url, JobController, ReplicaSetController, flags=flags) as manager:
            await client.create(REPLICASETS, rs_manifest("web", 2))
            await client.create(JOBS, job_manifest("batch", completions=1, parallelism=1))

            async def converged() -> bool:
                rs = await client.get(REPLICASETS, "web", namespace=NS)
                job = await client.get(JOBS, "batch", namespace=NS)
                done = any(c.get("type") == "Complete" for c in job.get("status", {}).get("conditions", ()))
                return bool(rs.get("status", {}).get("readyReplicas") == 2 and done)

            await wait_for(converged, 20.0, message="ReplicaSet ready and Job complete")
            async with (
                aiohttp.ClientSession() as session,
                session.get(f"{manager.server.url}/metrics") as got,
            ):
                assert got.status == 200
                return await got.text()
    finally:
        await client.close()


async def test_every_dashboard_query_uses_exported_metrics_and_labels(exposition: str) -> None:
    names, labels = exported(exposition)
    dashboard = json.loads(DASHBOARD.read_text())
    problems: list[str] = []
    queried: set[str] = set()
    for where, expression, legend in dashboard_queries(dashboard):
        metrics, used = promql_names(expression)
        if not metrics:
            problems.append(f"{where}: no metric in {expression}")
        queried |= metrics
        problems += [f"{where}: {name} is not exported" for name in sorted(metrics - names)]
        known = set().union(*(labels.get(name, set()) for name in metrics)) | TARGET_LABELS
        sampled = all(name in labels for name in metrics)  # a family without samples yet has unknown labels
        if sampled:
            problems += [
                f"{where}: no label {label} on {sorted(metrics)}" for label in sorted((used | legend) - known)
            ]
    assert not problems, "\n".join(problems)
    # What the issue asks the dashboard to show.
    for family in (
        "controller_runtime_reconcile_total",
        "controller_runtime_reconcile_errors_total",
        "controller_runtime_reconcile_time_seconds_bucket",
        "workqueue_depth",
        "workqueue_queue_duration_seconds_bucket",
        "workqueue_retries_total",
        "rest_client_requests_total",
        "rest_client_request_duration_seconds_bucket",
        "leader_election_master_status",
        "informer_last_activity_age_seconds",
    ):
        assert family in queried, family
    # The per-controller series the panels read exist for both controllers.
    for controller in ("job-controller", "replicaset-controller"):
        assert (
            f'controller_runtime_reconcile_total{{controller="{controller}",result="success"}}' in exposition
        )
    assert re.search(r'^leader_election_master_status\{name="[^"]+"\} 1\.0$', exposition, re.MULTILINE)


def test_the_dashboard_is_grafana_json() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["uid"] == "aiokcm" and dashboard["schemaVersion"] >= 36
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dashboard["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        for target in panel.get("targets", []):
            assert target["datasource"]["uid"] == "${datasource}", panel["title"]


def test_the_kustomize_copy_is_the_charts_dashboard() -> None:
    assert (ROOT / "config/prometheus/dashboard/aiokcm.json").read_bytes() == DASHBOARD.read_bytes()


def test_the_chart_ships_the_dashboard_off_by_default() -> None:
    values = yaml.safe_load((ROOT / "charts/aiokcm/values.yaml").read_text())
    assert values["dashboard"] == {
        "enabled": False,
        "label": "grafana_dashboard",
        "labelValue": "1",
        "namespace": "",
        "annotations": {},
    }
    template = (ROOT / "charts/aiokcm/templates/dashboard.yaml").read_text()
    assert '.Files.Get "dashboards/aiokcm.json"' in template
    assert "{{- if .Values.dashboard.enabled }}" in template


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed on this machine")
def test_kustomize_renders_the_dashboard_configmap() -> None:
    out = subprocess.run(
        ["kubectl", "kustomize", str(ROOT / "config/prometheus/dashboard")],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    (configmap,) = [d for d in yaml.safe_load_all(out) if d]
    assert configmap["kind"] == "ConfigMap" and configmap["metadata"]["name"] == "aiokcm-dashboard"
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(configmap["data"]["aiokcm.json"]) == json.loads(DASHBOARD.read_text())


def test_helm_renders_the_dashboard_configmap_only_when_enabled() -> None:
    helm_python = pytest.importorskip("helm_python")  # the test extra installs it on linux x86_64
    from tests.chart.render import manifests

    def dashboards(values: dict[str, Any]) -> list[dict[str, Any]]:
        return [
            d
            for d in manifests(values)
            if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-dashboard")
        ]

    assert dashboards({}) == []
    enabled = {"enabled": True, "namespace": "grafana", "annotations": {"grafana_folder": "Kubernetes"}}
    (configmap,) = dashboards({"dashboard": enabled})
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert configmap["metadata"]["namespace"] == "grafana"
    assert configmap["metadata"]["annotations"] == {"grafana_folder": "Kubernetes"}
    assert json.loads(configmap["data"]["aiokcm.json"]) == json.loads(DASHBOARD.read_text())
    (relabelled,) = dashboards(
        {"dashboard": {"enabled": True, "label": "my_dashboards", "labelValue": "yes"}}
    )
    assert relabelled["metadata"]["labels"]["my_dashboards"] == "yes"
    assert "grafana_dashboard" not in relabelled["metadata"]["labels"]
    with pytest.raises(helm_python.HelmError, match="lable"):
        dashboards({"dashboard": {"enabled": True, "lable": "typo"}})
