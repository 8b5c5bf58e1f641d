"""The kustomize bases in kubebuilder's layout: config/default builds (`kubectl kustomize`), its objects are
valid for several Kubernetes versions, the namespace enforces the restricted Pod Security profile and the pod
meets it, the image is pinned, config/samples builds, and `kubectl apply` of both lands in kubesim."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesim import KubeSim
from tests.chart.pod_security import restricted_violations
from tests.helpers import run_kubectl

pytestmark = pytest.mark.skipif(
    shutil.which("kubectl") is None, reason="kubectl (kustomize built in) is missing"
)
kubernetes_validate = pytest.importorskip("kubernetes_validate")

CONFIG = Path(__file__).resolve().parents[2] / "config"
KUBERNETES_VERSIONS = ["1.29.0", "1.32.0", "1.35.0"]
NOT_SERVED_BY_KUBESIM = {"PodDisruptionBudget"}  # kubesim serves no policy/v1


def build(base: str) -> list[dict[str, Any]]:
    out = subprocess.run(
        ["kubectl", "kustomize", str(CONFIG / base)], check=True, capture_output=True, text=True, timeout=60
    ).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def test_default_installs_a_pinned_restricted_manager_into_its_namespace() -> None:
    documents = build("default")
    (namespace,) = [d for d in documents if d["kind"] == "Namespace"]
    assert namespace["metadata"]["name"] == "aiokcm-system"
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    (deployment,) = [d for d in documents if d["kind"] == "Deployment"]
    assert deployment["metadata"]["namespace"] == "aiokcm-system"
    spec = deployment["spec"]["template"]["spec"]
    assert spec["containers"][0]["image"] == "aiokcm:0.1.0"
    assert restricted_violations(spec) == []
    assert {d["kind"] for d in documents} >= {"PodDisruptionBudget", "CustomResourceDefinition", "Role"}
    bindings = [d for d in documents if d["kind"] in ("ClusterRoleBinding", "RoleBinding")]
    assert {s["namespace"] for b in bindings for s in b["subjects"]} == {"aiokcm-system"}
    roles = {d["metadata"]["name"] for d in documents if d["kind"] == "ClusterRole"}
    assert "aiokcm:manager" in roles and "aiokcm:controller:job-controller" in roles
    assert "aiokcm:controller:pipeline-controller" not in roles  # `--controllers=*` leaves it off


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_default_and_samples_are_valid_for_each_kubernetes_version(version: str) -> None:
    documents = [*build("default"), *build("samples")]
    checked = [d for d in documents if not d["apiVersion"].startswith("workflows.aiokcm.io/")]
    for document in checked:
        kubernetes_validate.validate(document, version, strict=True)
    assert len(checked) >= 20


async def test_kubectl_applies_default_and_samples_to_kubesim(tmp_path: Path) -> None:
    default = [d for d in build("default") if d["kind"] not in NOT_SERVED_BY_KUBESIM]
    manifest = tmp_path / "default.yaml"
    manifest.write_text(yaml.safe_dump_all(default))
    async with KubeSim() as sim:
        code, out, err = await run_kubectl(sim.kubeconfig, tmp_path, "apply", "-f", str(manifest))
        assert code == 0, err
        assert out.count("created") == len(default)
        code, out, err = await run_kubectl(
            sim.kubeconfig, tmp_path, "apply", "-n", "default", "-k", str(CONFIG / "samples")
        )
        assert code == 0, err
        code, out, err = await run_kubectl(
            sim.kubeconfig, tmp_path, "get", "clusterrolebindings,rolebindings", "-A", "-o", "name"
        )
        assert code == 0, err
        assert "rolebinding.rbac.authorization.k8s.io/aiokcm-leader-election" in out
        assert "clusterrolebinding.rbac.authorization.k8s.io/aiokcm:manager" in out
