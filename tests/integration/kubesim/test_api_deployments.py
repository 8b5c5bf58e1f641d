"""What the API server does for Deployments that the deployment controller and kubectl rely on: defaults,
selector rules, rolling-update values, and /status persisting annotations (but not labels or spec)."""

from __future__ import annotations

from typing import Any

import pytest

from kubesim import KubeSim
from kubesim.pytest_plugin import KubeSimFactory
from tests.kubesim_api import Api

Obj = dict[str, Any]
DEPLOYS = "/apis/apps/v1/namespaces/default/deployments"


@pytest.fixture
async def sim(kubesim_factory: KubeSimFactory) -> KubeSim:
    return await kubesim_factory(kubelet=False)


def deployment(name: str, **spec: Any) -> Obj:
    labels = {"app": name}
    body: Obj = {
        "selector": {"matchLabels": labels},
        "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
    }
    body.update(spec)
    return {"metadata": {"name": name}, "spec": body}


async def test_defaults(api: Api) -> None:
    spec = (await api.ok("POST", DEPLOYS, deployment("d")))["spec"]
    assert spec["replicas"] == 1
    assert spec["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
    }
    assert spec["revisionHistoryLimit"] == 10 and spec["progressDeadlineSeconds"] == 600


async def test_selector_is_required_must_match_the_template_and_is_immutable(api: Api) -> None:
    body = deployment("d")
    del body["spec"]["selector"]
    status, payload = await api.call("POST", DEPLOYS, body)
    assert status == 422 and "spec.selector: Required value" in payload["message"]
    body = deployment("d", selector={"matchLabels": {"app": "other"}})
    status, payload = await api.call("POST", DEPLOYS, body)
    assert status == 422 and "`selector` does not match template `labels`" in payload["message"]
    created = await api.ok("POST", DEPLOYS, deployment("d"))
    created["spec"]["selector"] = {"matchLabels": {"app": "d", "x": "y"}}
    created["spec"]["template"]["metadata"]["labels"]["x"] = "y"
    status, payload = await api.call("PUT", f"{DEPLOYS}/d", created)
    assert status == 422 and "field is immutable" in payload["message"]


@pytest.mark.parametrize(
    ("rolling", "message"),
    [
        (
            {"maxSurge": -1},
            "spec.strategy.rollingUpdate.maxSurge: Invalid value: -1: must be greater than or equal",
        ),
        (
            {"maxUnavailable": "25x"},
            'spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "25x": a valid',
        ),
        ({"maxUnavailable": "101%"}, "must not be greater than 100%"),
        ({"maxUnavailable": "0%", "maxSurge": 0}, "may not be 0 when `maxSurge` is 0"),
    ],
)
async def test_rolling_update_values(api: Api, rolling: Obj, message: str) -> None:
    body = deployment("d", strategy={"type": "RollingUpdate", "rollingUpdate": rolling})
    status, payload = await api.call("POST", DEPLOYS, body)
    assert status == 422 and message in payload["message"], payload


async def test_status_persists_annotations_but_resets_spec_and_labels(api: Api) -> None:
    created = await api.ok("POST", DEPLOYS, deployment("d"))
    created["metadata"]["annotations"] = {"deployment.kubernetes.io/revision": "1"}
    created["metadata"]["labels"] = {"sneaky": "yes"}
    created["spec"]["replicas"] = 7
    created["status"] = {"observedGeneration": 1, "replicas": 0}
    written = await api.ok("PUT", f"{DEPLOYS}/d/status", created)
    assert written["metadata"]["annotations"] == {"deployment.kubernetes.io/revision": "1"}
    assert "labels" not in written["metadata"] and written["spec"]["replicas"] == 1
    assert written["status"]["observedGeneration"] == 1
    assert written["metadata"]["generation"] == 1  # a status write never bumps generation
    assert written["metadata"]["uid"] == created["metadata"]["uid"]
    fetched = await api.ok("GET", f"{DEPLOYS}/d")
    assert fetched["metadata"]["annotations"] == {"deployment.kubernetes.io/revision": "1"}
