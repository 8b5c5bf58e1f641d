"""kubectl against kubesim with custom resources: server-side printer columns (`kubectl get widgets`), and a
CRD applied in one file with a resource of its kind, which kubectl reports as a real cluster does."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from kubesim import KubeSim
from kubesim.pytest_plugin import KubeSimFactory
from kubesim.server.openapi_pb import MEDIA_TYPE
from tests.helpers import run_kubectl, wait_for
from tests.kubesim_api import Api

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
WIDGETS = "/apis/example.com/v1/namespaces/default/widgets"
COLUMNS = [
    {"name": "Ready", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status'},
    {"name": "Reason", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].reason'},
    {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
    {"name": "Hosts", "type": "string", "jsonPath": ".spec.hosts"},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]


def crd(columns: list[dict[str, str]] | None = None) -> dict[str, object]:
    version: dict[str, object] = {
        "name": "v1",
        "served": True,
        "storage": True,
        "subresources": {"status": {}},
        "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
    }
    if columns:
        version["additionalPrinterColumns"] = columns
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [version],
        },
    }


WIDGET = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "x", "namespace": "default"}}


@pytest.fixture
async def sim(kubesim_factory: KubeSimFactory) -> KubeSim:
    return await kubesim_factory(kubelet=False)


async def kubectl(sim: KubeSim, tmp_path: Path, *args: str) -> tuple[int, str, str]:
    return await run_kubectl(sim.kubeconfig, tmp_path / "cache", *args)


async def test_printer_columns(api: Api, sim: KubeSim, tmp_path: Path) -> None:
    await api.ok("POST", CRDS, crd(COLUMNS))
    await wait_for(lambda: api.call("GET", WIDGETS), message="widgets served")
    await api.ok("POST", WIDGETS, dict(WIDGET, spec={"size": 3, "hosts": ["a", "b"]}))
    conditions = [
        {"type": "Progressing", "status": "True"},
        {"type": "Ready", "status": "False", "reason": "Waiting"},
    ]
    await api.ok(
        "PATCH", f"{WIDGETS}/x/status", {"status": {"conditions": conditions}}, "application/merge-patch+json"
    )
    await api.ok("POST", WIDGETS, dict(WIDGET, metadata={"name": "bare"}))
    code, out, err = await kubectl(sim, tmp_path, "get", "widgets")
    assert code == 0, err
    rows = [line.split() for line in out.splitlines()]
    assert rows[0] == ["NAME", "READY", "REASON", "SIZE", "HOSTS", "AGE"]
    assert rows[1][0] == "bare" and len(rows[1]) == 2  # null cells print blank: only the name and age
    assert rows[2][:5] == ["x", "False", "Waiting", "3", '["a","b"]']
    assert rows[2][5].endswith("s")  # an age, seconds old


async def test_custom_resource_without_columns_shows_age(api: Api, sim: KubeSim, tmp_path: Path) -> None:
    await api.ok("POST", CRDS, crd())
    await wait_for(lambda: api.call("GET", WIDGETS), message="widgets served")
    await api.ok("POST", WIDGETS, WIDGET)
    code, out, err = await kubectl(sim, tmp_path, "get", "widgets")
    assert code == 0, err
    assert out.splitlines()[0].split() == ["NAME", "AGE"]


async def test_apply_crd_and_resource_in_one_file(api: Api, sim: KubeSim, tmp_path: Path) -> None:
    both = tmp_path / "both.yaml"
    both.write_text(yaml.safe_dump_all([crd(), dict(WIDGET, spec={"size": 1})]))
    code, out, err = await kubectl(sim, tmp_path, "apply", "-f", str(both))
    # kubectl validates the Widget client-side against /openapi/v2 (protobuf), finds no such kind there,
    # then fails its REST mapping; the CRD before it is applied all the same
    assert code == 1
    assert out == "customresourcedefinition.apiextensions.k8s.io/widgets.example.com created\n"
    assert err == (
        f'error: resource mapping not found for name: "x" namespace: "default" from "{both}": '
        'no matches for kind "Widget" in version "example.com/v1"\nensure CRDs are installed first\n'
    )
    await wait_for(lambda: api.call("GET", WIDGETS), message="widgets served")
    code, out, err = await kubectl(sim, tmp_path, "apply", "-f", str(both))
    assert code == 0, err
    assert out.splitlines() == [
        "customresourcedefinition.apiextensions.k8s.io/widgets.example.com unchanged",
        "widget.example.com/x created",
    ]


async def test_client_side_validation_reads_protobuf_openapi(api: Api, sim: KubeSim, tmp_path: Path) -> None:
    """A v1 List is always validated client-side: kubectl parses the whole protobuf document to do it."""
    items = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "bogus": 1}]
    listed = tmp_path / "list.yaml"
    listed.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    code, _, err = await kubectl(sim, tmp_path, "apply", "-f", str(listed))
    assert code == 1
    assert 'ValidationError(ConfigMap): unknown field "bogus" in io.k8s.api.core.v1.ConfigMap' in err


async def test_openapi_v2_negotiation(api: Api) -> None:
    async def fetch(accept: str) -> tuple[int, str, bytes]:
        async with api.session.get(api.url + "/openapi/v2", headers={"Accept": accept}) as resp:
            return resp.status, resp.content_type, await resp.read()

    status, content_type, body = await fetch(MEDIA_TYPE)
    assert status == 200 and content_type.endswith("+protobuf")
    assert body.startswith(b"\n\x032.0")  # Document.swagger = "2.0"
    status, content_type, _ = await fetch(f"application/json, {MEDIA_TYPE}")
    assert status == 200 and content_type == "application/json"
    assert (await fetch("text/html"))[0] == 406
