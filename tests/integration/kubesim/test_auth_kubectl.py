"""kubectl against kubesim in RBAC mode over HTTPS (kubectl sends its token only over TLS): `auth can-i`,
`auth whoami`, `create token`, and client certificates."""

from __future__ import annotations

import shutil
import ssl
from pathlib import Path

import aiohttp
import pytest
import trustme

from kubesim import KubeSim
from kubesim.pytest_plugin import KubeSimFactory
from tests.helpers import run_kubectl

pytestmark = pytest.mark.skipif(
    shutil.which("kubectl") is None, reason="kubectl is not installed on this machine"
)


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
async def sim(kubesim_factory: KubeSimFactory, ca: trustme.CA) -> KubeSim:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    ca.configure_trust(context)  # client certificates signed by the same CA authenticate
    context.verify_mode = ssl.CERT_OPTIONAL
    return await kubesim_factory(
        kubelet=False, authorization_mode="RBAC", ssl_context=context, ca_pem=ca.cert_pem.bytes().decode()
    )


async def kubectl(sim: KubeSim, tmp_path: Path, *args: str) -> tuple[int, str, str]:
    return await run_kubectl(sim.kubeconfig, tmp_path / "cache", *args)


async def test_can_i_and_whoami_answer_as_a_real_cluster(sim: KubeSim, tmp_path: Path) -> None:
    assert sim.url.startswith("https://")
    code, out, _ = await kubectl(sim, tmp_path, "auth", "whoami")
    assert code == 0 and "kubesim-admin" in out and "system:masters" in out
    assert (await kubectl(sim, tmp_path, "auth", "can-i", "delete", "nodes"))[:2] == (0, "yes\n")
    nobody = "--as=system:serviceaccount:default:nobody"
    assert (await kubectl(sim, tmp_path, "auth", "can-i", "delete", "nodes", nobody))[:2] == (1, "no\n")
    code, _, err = await kubectl(sim, tmp_path, "get", "pods", nobody)
    assert code == 1
    assert (
        'pods is forbidden: User "system:serviceaccount:default:nobody" cannot list resource "pods"'
        ' in API group "" in the namespace "default"' in err
    )

    assert (
        await kubectl(sim, tmp_path, "create", "role", "pod-reader", "--verb=get,list", "--resource=pods")
    )[0] == 0
    bind = ("create", "rolebinding", "nobody-reads", "--role=pod-reader", "--serviceaccount=default:nobody")
    assert (await kubectl(sim, tmp_path, *bind))[0] == 0
    assert (await kubectl(sim, tmp_path, "auth", "can-i", "list", "pods", nobody))[:2] == (0, "yes\n")
    assert (await kubectl(sim, tmp_path, "auth", "can-i", "list", "pods", "-n", "kube-system", nobody))[
        :2
    ] == (
        1,
        "no\n",
    )
    assert (await kubectl(sim, tmp_path, "get", "pods", nobody))[0] == 0
    log = ("auth", "can-i", "get", "pods", "--subresource=log", nobody)
    assert (await kubectl(sim, tmp_path, *log))[:2] == (
        1,
        "no\n",
    )  # a resource does not grant its subresources
    code, listed, _ = await kubectl(sim, tmp_path, "auth", "can-i", "--list", nobody)
    assert code == 0
    assert [line.split() for line in listed.splitlines() if line.startswith("pods ")] == [
        ["pods", "[]", "[]", "[get", "list]"]
    ]


async def test_create_token_authenticates_as_the_service_account(sim: KubeSim, tmp_path: Path) -> None:
    assert (await kubectl(sim, tmp_path, "create", "serviceaccount", "bot"))[0] == 0
    code, token, err = await kubectl(sim, tmp_path, "create", "token", "bot", "--duration=20m")
    assert code == 0, err
    code, out, _ = await kubectl(sim, tmp_path, f"--token={token.strip()}", "auth", "whoami")
    assert (
        code == 0 and "system:serviceaccount:default:bot" in out and "system:serviceaccounts:default" in out
    )
    code, _, err = await kubectl(sim, tmp_path, f"--token={token.strip()}", "get", "configmaps")
    assert code == 1 and "Forbidden" in err
    code, _, err = await kubectl(sim, tmp_path, "--token=wrong", "get", "configmaps")
    assert code == 1 and "Unauthorized" in err


async def test_client_certificates_authenticate(sim: KubeSim, ca: trustme.CA, tmp_path: Path) -> None:
    client = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    ca.configure_trust(client)
    ca.issue_cert("carol", common_name="carol", organization_name="ops").configure_cert(client)
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            sim.url + "/apis/authentication.k8s.io/v1/selfsubjectreviews", json={}, ssl=client
        ) as response,
    ):
        review = await response.json()
    assert review["status"]["userInfo"] == {"username": "carol", "groups": ["ops", "system:authenticated"]}
