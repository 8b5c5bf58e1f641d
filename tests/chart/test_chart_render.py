"""The Helm chart rendered by Helm (helm-python-sdk, offline): default and non-default values, schema
refusals, the leader-election guard, RBAC equal to `aiokcm rbac`'s, valid objects for several Kubernetes
versions, and a pod that meets the restricted Pod Security profile."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from manager.cli import main as cli
from tests.chart.pod_security import restricted_violations
from tests.chart.render import CHART, manifests, one, render

helm_python = pytest.importorskip("helm_python", reason="helm-python-sdk (the test extra) renders the chart")
kubernetes_validate = pytest.importorskip("kubernetes_validate")

KUBERNETES_VERSIONS = ["1.29.0", "1.32.0", "1.35.0"]
NON_DEFAULT: dict[str, Any] = {
    "replicaCount": 3,
    "controllers": ["*", "pipeline", "-garbagecollector"],
    "image": {"repository": "registry.example.com/aiokcm", "tag": "0.1.0"},
    "imagePullSecrets": [{"name": "regcred"}],
    "podAnnotations": {"example.com/team": "platform"},
    "serviceAccount": {"annotations": {"example.com/role": "aiokcm"}},
    "priorityClassName": "system-cluster-critical",
    "shutdownGracePeriod": "2m",
    "serviceMonitor": {"enabled": True, "labels": {"release": "kube-prometheus-stack"}},
    "rbac": {"extraRules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]},
    "leaderElection": {"resourceName": "lock", "resourceNamespace": "leases"},
    "topologySpreadConstraints": [
        {"maxSkew": 2, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule"}
    ],
    "podDisruptionBudget": {"maxUnavailable": 2},
    "logLevel": "debug",
    "networkPolicy": {
        "enabled": True,
        "metricsFrom": [{"namespaceSelector": {"matchLabels": {"metrics": "on"}}}],
    },
}


def pod_spec(documents: list[dict[str, Any]]) -> dict[str, Any]:
    spec: dict[str, Any] = one(documents, "Deployment")["spec"]["template"]["spec"]
    return spec


def test_defaults_render_a_spread_disruption_budgeted_manager_with_one_loop_probes() -> None:
    documents = manifests()
    kinds = sorted(d["kind"] for d in documents)
    # manager + 7 on by default, each bound; metrics-reader is for the scraper to be bound to
    assert kinds.count("ClusterRole") - 1 == kinds.count("ClusterRoleBinding") == 8
    assert "NetworkPolicy" not in kinds
    assert {"Deployment", "Service", "ServiceAccount", "Role", "RoleBinding", "PodDisruptionBudget"} <= set(
        kinds
    )
    assert "ServiceMonitor" not in kinds
    assert one(documents, "PodDisruptionBudget")["spec"]["maxUnavailable"] == 1
    spec = pod_spec(documents)
    assert [c["topologyKey"] for c in spec["topologySpreadConstraints"]] == [
        "topology.kubernetes.io/zone",
        "kubernetes.io/hostname",
    ]
    assert spec["terminationGracePeriodSeconds"] == 30 + 10  # shutdownGracePeriod + margin
    (container,) = spec["containers"]
    assert container["image"] == "aiokcm:0.1.0"
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        assert container[probe]["timeoutSeconds"] == 5, probe
    assert container["startupProbe"]["periodSeconds"] * container["startupProbe"]["failureThreshold"] >= 60
    # kube-controller-manager's secure serving: HTTPS probes on --secure-port, /metrics for a reader role
    assert "--secure-port=10257" in container["args"]
    assert {
        container[p]["httpGet"]["scheme"] for p in ("startupProbe", "livenessProbe", "readinessProbe")
    } == {"HTTPS"}
    reader = next(d for d in documents if d["metadata"]["name"] == "demo-aiokcm:metrics-reader")
    assert reader["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
    assert "imagePullSecrets" not in spec and "priorityClassName" not in spec
    assert "demo-aiokcm" in render()["aiokcm/templates/NOTES.txt"]


def test_non_default_values_reach_the_objects() -> None:
    documents = manifests(NON_DEFAULT)
    spec = pod_spec(documents)
    assert spec["imagePullSecrets"] == [{"name": "regcred"}]
    assert spec["priorityClassName"] == "system-cluster-critical"
    assert spec["terminationGracePeriodSeconds"] == 120 + 10
    assert spec["topologySpreadConstraints"] == NON_DEFAULT["topologySpreadConstraints"]
    assert spec["containers"][0]["image"] == "registry.example.com/aiokcm:0.1.0"
    assert "--log-level=debug" in spec["containers"][0]["args"]
    deployment = one(documents, "Deployment")
    assert deployment["spec"]["replicas"] == 3
    assert deployment["spec"]["template"]["metadata"]["annotations"] == {"example.com/team": "platform"}
    assert one(documents, "ServiceAccount")["metadata"]["annotations"] == {"example.com/role": "aiokcm"}
    monitor = one(documents, "ServiceMonitor")
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    (endpoint,) = monitor["spec"]["endpoints"]
    assert (endpoint["scheme"], endpoint["tlsConfig"]) == ("https", {"insecureSkipVerify": True})
    assert endpoint["bearerTokenFile"] == "/var/run/secrets/kubernetes.io/serviceaccount/token"
    (rule,) = one(documents, "NetworkPolicy")["spec"]["ingress"]
    assert (
        rule["ports"] == [{"port": 10257, "protocol": "TCP"}]
        and rule["from"] == NON_DEFAULT["networkPolicy"]["metricsFrom"]
    )
    assert one(documents, "PodDisruptionBudget")["spec"]["maxUnavailable"] == 2
    role = one(documents, "Role")
    assert role["metadata"]["namespace"] == "leases" and role["rules"][1]["resourceNames"] == ["lock"]
    manager_role = next(d for d in documents if d["metadata"]["name"] == "demo-aiokcm:manager")
    assert {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]} in manager_role["rules"]


def test_switches_turn_objects_off() -> None:
    kinds = {
        d["kind"]
        for d in manifests(
            {
                "rbac": {"create": False},
                "serviceAccount": {"create": False},
                "podDisruptionBudget": {"enabled": False},
            }
        )
    }
    assert kinds == {"Deployment", "Service"}


def _rbac_by_role(documents: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """ClusterRoles and Roles by name without the release's prefix (`demo-aiokcm:x` and `aiokcm:x` → `x`)."""
    return {
        d["metadata"]["name"].split(":", 1)[-1].removeprefix("demo-aiokcm").removeprefix("aiokcm"): d["rules"]
        for d in documents
        if d["kind"] in ("ClusterRole", "Role") and not d["metadata"]["name"].endswith(":metrics-reader")
    }


@pytest.mark.parametrize(
    "controllers",
    [["*"], ["*", "pipeline", "-garbagecollector"], ["job", "ttl-after-finished"], ["-job", "*", "job"]],
)
def test_the_charts_rbac_is_what_aiokcm_rbac_prints_for_the_same_controllers(
    controllers: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    chart = manifests({"controllers": controllers})
    argv = ["rbac", f"--controllers={','.join(controllers)}", "--leader-elect-resource-name=aiokcm"]
    assert cli.main(argv) == 0
    printed = [d for d in yaml.safe_load_all(capsys.readouterr().out) if d]
    assert _rbac_by_role(chart) == _rbac_by_role(printed)
    bound = {d["roleRef"]["name"] for d in chart if d["kind"].endswith("Binding")}
    roles = {d["metadata"]["name"] for d in chart if d["kind"] in ("ClusterRole", "Role")}
    assert bound == roles - {"demo-aiokcm:metrics-reader"}  # the scraper's, bound by whoever runs it


@pytest.mark.parametrize("values", [{}, NON_DEFAULT], ids=["default", "non-default"])
@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_rendered_objects_are_valid_for_each_kubernetes_version(values: dict[str, Any], version: str) -> None:
    checked = 0
    for document in manifests(values):
        if document["apiVersion"].startswith("monitoring.coreos.com/"):
            continue  # the Prometheus Operator's CRD: no schema in kubernetes-validate
        kubernetes_validate.validate(document, version, strict=True)
        checked += 1
    assert checked >= 10


@pytest.mark.parametrize("values", [{}, NON_DEFAULT], ids=["default", "non-default"])
def test_the_pod_meets_the_restricted_pod_security_profile(values: dict[str, Any]) -> None:
    assert restricted_violations(pod_spec(manifests(values))) == []


def test_the_restricted_check_catches_what_it_checks() -> None:
    spec = pod_spec(manifests())
    container = spec["containers"][0]
    container["securityContext"] = {"allowPrivilegeEscalation": True, "capabilities": {"add": ["NET_ADMIN"]}}
    spec["securityContext"] = {"seccompProfile": {"type": "Unconfined"}}
    spec["volumes"] = [{"name": "root", "hostPath": {"path": "/"}}]
    assert len(restricted_violations(spec)) == 7


SCHEMA = json.loads((CHART / "values.schema.json").read_text())


@pytest.mark.parametrize(
    ("values", "where"),
    [
        ({"replicaCount": "two"}, "replicaCount"),
        ({"logLevel": "verbose"}, "logLevel"),
        ({"shutdownGracePeriod": "30 seconds"}, "shutdownGracePeriod"),
        ({"controllers": "*"}, "controllers"),
        ({"image": {"pullPolicy": "Sometimes"}}, "pullPolicy"),
        ({"replicaCont": 2}, "replicaCont"),
    ],
)
def test_bad_values_fail_the_schema_and_the_install(values: dict[str, Any], where: str) -> None:
    defaults = yaml.safe_load((CHART / "values.yaml").read_text())
    jsonschema.validate(defaults, SCHEMA)  # the defaults pass
    merged = {**defaults, **values}
    if "image" in values:
        merged["image"] = {**defaults["image"], **values["image"]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(merged, SCHEMA)
    with pytest.raises(helm_python.HelmValuesError, match=where):
        render(values)


def test_several_replicas_without_leader_election_are_refused() -> None:
    with pytest.raises(
        helm_python.HelmRenderError, match=r"leaderElection\.enabled=false with replicaCount > 1"
    ):
        render({"leaderElection": {"enabled": False}})
    single = manifests({"leaderElection": {"enabled": False}, "replicaCount": 1})
    assert "Role" not in {d["kind"] for d in single}
    assert "--leader-elect=false" in pod_spec(single)["containers"][0]["args"]


def test_the_charts_crds_are_the_generated_ones() -> None:
    root = Path(__file__).resolve().parents[2]
    for crd in (CHART / "crds").iterdir():
        assert crd.read_text() == (root / "config/crd" / crd.name).read_text(), crd.name


def test_helm_lint_finds_no_warning_or_error() -> None:
    report = helm_python.lint(str(CHART))
    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] >= 2] == []  # 1 is INFO ("icon is recommended")
