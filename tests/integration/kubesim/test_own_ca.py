"""kubesim serving HTTPS with a CA it makes itself (`KubeSim(tls=True)`, `kubesim --tls`): the kubeconfig
carries the CA and the admin token, so kubectl, our client and the official client verify the server and
authenticate; client certificates signed by the same CA authenticate as their CN/O."""

from __future__ import annotations

import asyncio
import base64
import shutil
import ssl
import sys
from pathlib import Path
from typing import Any

import aiohttp
import kubernetes
import pytest
import yaml

from kubesim import KubeSim
from kubesim.pytest_plugin import KubeSimFactory
from kubesim.server.tls import load_chain
from manager.apimachinery.resources import NAMESPACES
from manager.client.rest import create_client
from tests.helpers import run_kubectl

needs_kubectl = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")


@pytest.fixture
async def sim(kubesim_factory: KubeSimFactory) -> KubeSim:
    return await kubesim_factory(kubelet=False, authorization_mode="RBAC", tls=True)


async def test_the_kubeconfig_carries_the_ca_and_our_client_verifies_the_server(sim: KubeSim) -> None:
    assert sim.url.startswith("https://127.0.0.1:") and sim.ca is not None
    config = yaml.safe_load(await asyncio.to_thread(Path(sim.kubeconfig).read_text))
    cluster = config["clusters"][0]["cluster"]
    assert base64.b64decode(cluster["certificate-authority-data"]).decode() == sim.ca.cert_pem
    client = await create_client(kubeconfig=sim.kubeconfig)
    try:
        namespace = await client.get(NAMESPACES, "default")
        assert namespace["metadata"]["name"] == "default"
    finally:
        await client.close()
    # Without the CA the server is not trusted: the certificate is kubesim's own, not a public one.
    async with aiohttp.ClientSession() as session:
        with pytest.raises(aiohttp.ClientConnectorCertificateError):
            await session.get(f"{sim.url}/version")


async def test_the_official_client_lists_with_the_kubeconfig(sim: KubeSim) -> None:
    def namespaces() -> list[str]:  # a blocking client: in a thread, kubesim serves on this loop
        api: Any = kubernetes.config.new_client_from_config(config_file=sim.kubeconfig)  # type: ignore[no-untyped-call]
        try:
            items: Any = kubernetes.client.CoreV1Api(api).list_namespace().items
            return [n.metadata.name for n in items]
        finally:
            api.close()

    assert "kube-system" in await asyncio.to_thread(namespaces)


async def test_a_client_certificate_from_the_ca_authenticates(sim: KubeSim) -> None:
    assert sim.ca is not None and sim.ca_pem is not None
    cert_pem, key_pem = sim.ca.issue_client_cert("jane", ("devs",))
    context = ssl.create_default_context(cadata=sim.ca_pem)
    load_chain(context, cert_pem, key_pem)
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    async with aiohttp.ClientSession() as session:
        url = f"{sim.url}/apis/authentication.k8s.io/v1/selfsubjectreviews"
        async with session.post(url, json=review, ssl=context) as response:
            assert response.status == 201, await response.text()
            user = (await response.json())["status"]["userInfo"]
    assert user["username"] == "jane" and "devs" in user["groups"]


@needs_kubectl
async def test_kubectl_sends_the_admin_token(sim: KubeSim, tmp_path: Path) -> None:
    code, out, err = await run_kubectl(sim.kubeconfig, tmp_path / "cache", "auth", "whoami")
    assert code == 0, err
    assert "kubesim-admin" in out and "system:masters" in out
    nobody = "--as=system:serviceaccount:default:nobody"
    assert (await run_kubectl(sim.kubeconfig, tmp_path / "cache", "get", "pods", nobody))[0] == 1


@needs_kubectl
async def test_the_command_line_serves_https_with_tls(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "kubesim.cli",
        "--port=0",
        "--no-kubelet",
        "--tls",
        "--authorization-mode=RBAC",
        f"--kubeconfig={kubeconfig}",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        assert process.stdout is not None
        line = (await asyncio.wait_for(process.stdout.readline(), 30)).decode()
        assert line.startswith("kubesim ready at https://127.0.0.1:"), line
        code, out, err = await run_kubectl(kubeconfig, tmp_path / "cache", "auth", "whoami")
        assert code == 0 and "kubesim-admin" in out, err
    finally:
        process.terminate()
        assert await asyncio.wait_for(process.wait(), 10) == 0
