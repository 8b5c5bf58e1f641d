"""Protobuf request bodies: kubectl's `create <generator>` commands send them; kubesim decodes them."""

from __future__ import annotations

import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiohttp
import orjson
import pytest

from kubesim import KubeSim
from kubesim.pytest_plugin import KubeSimFactory
from tests.helpers import run_kubectl

PROTOBUF = "application/vnd.kubernetes.protobuf"


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def field(number: int, value: bytes | str | int) -> bytes:
    if isinstance(value, int):
        return _varint(number << 3) + _varint(value)
    data = value.encode() if isinstance(value, str) else value
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    return (
        b"k8s\x00"
        + field(1, field(1, api_version) + field(2, kind))
        + field(2, raw)
        + field(3, "")
        + field(4, "")
    )


@pytest.fixture
async def sim(kubesim_factory: KubeSimFactory) -> KubeSim:
    return await kubesim_factory(kubelet=False)


async def post(sim: KubeSim, path: str, body: bytes) -> tuple[int, dict[str, object]]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            sim.url + path,
            data=body,
            headers={"Content-Type": PROTOBUF, "Accept": f"{PROTOBUF}, application/json"},
        ) as resp,
    ):
        return resp.status, orjson.loads(await resp.read())


async def test_configmap_from_protobuf_drops_zero_values(sim: KubeSim) -> None:
    meta = field(1, "pb") + field(2, "") + field(7, 0) + field(11, field(1, "app") + field(2, "x"))
    raw = field(1, meta) + field(2, field(1, "key") + field(2, "value"))
    status, body = await post(sim, "/api/v1/namespaces/default/configmaps", envelope("v1", "ConfigMap", raw))
    assert status == 201, body
    assert body["data"] == {"key": "value"}
    assert body["metadata"]["labels"] == {"app": "x"}  # type: ignore[index]
    assert "generateName" not in body["metadata"]  # type: ignore[operator]


async def test_protobuf_errors(sim: KubeSim) -> None:
    status, body = await post(sim, "/api/v1/namespaces/default/configmaps", b"k8s\x00\xff\xff")
    assert status == 400 and body["reason"] == "BadRequest"
    status, body = await post(sim, "/api/v1/namespaces/default/configmaps", b"not protobuf")
    assert status == 400
    status, body = await post(sim, "/api/v1/nodes", envelope("v1", "Node", field(1, field(1, "n"))))
    assert status == 415 and body["reason"] == "UnsupportedMediaType"


def kubectl_runner(sim: KubeSim, tmp_path: Path) -> Callable[..., Awaitable[str]]:
    """kubectl against `sim` with a per-test discovery cache; a non-zero exit fails the test."""

    async def kubectl(*args: str) -> str:
        code, out, err = await run_kubectl(sim.kubeconfig, tmp_path / "cache", *args)
        assert code == 0, err
        return out

    return kubectl


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed on this machine")
async def test_kubectl_create_generators(sim: KubeSim, tmp_path: Path) -> None:
    kubectl = kubectl_runner(sim, tmp_path)
    await kubectl("create", "namespace", "team")
    await kubectl("create", "configmap", "cfg", "-n", "team", "--from-literal=a=b")
    await kubectl("create", "secret", "generic", "sec", "-n", "team", "--from-literal=p=q")
    await kubectl("create", "deployment", "web", "-n", "team", "--image=nginx", "--replicas=2", "--port=80")
    await kubectl("create", "job", "once", "-n", "team", "--image=busybox", "--", "echo", "hi")
    store = sim.store
    assert store.entry("namespaces", "", "team") is not None
    cfg = store.get("configmaps", "team", "cfg")
    assert cfg is not None and cfg["data"] == {"a": "b"}
    secret = store.get("secrets", "team", "sec")
    assert secret is not None and secret["data"] == {"p": "cQ=="}
    web = store.get("deployments.apps", "team", "web")
    assert web is not None and web["spec"]["replicas"] == 2
    container = web["spec"]["template"]["spec"]["containers"][0]
    assert (container["image"], container["ports"][0]["containerPort"]) == ("nginx", 80)
    job = store.get("jobs.batch", "team", "once")
    assert job is not None
    assert job["spec"]["template"]["spec"]["containers"][0]["command"] == ["echo", "hi"]


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed on this machine")
async def test_kubectl_auth_reviews(sim: KubeSim, tmp_path: Path) -> None:
    kubectl = kubectl_runner(sim, tmp_path)
    assert (await kubectl("auth", "can-i", "create", "pods")).strip() == "yes"
    assert "kubesim-admin" in await kubectl("auth", "whoami")
    rv = sim.store.resource_version
    await kubectl("auth", "can-i", "--list")
    assert sim.store.resource_version == rv  # reviews are never stored
