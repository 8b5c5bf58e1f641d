"""Shared by the secure-serving tests: kubesim enforcing RBAC with a few token users, the grants they hold,
and a manager serving HTTPS with delegated authentication and authorization against it."""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import aiohttp

from controllers.replicaset import ReplicaSetController
from kubesim import KubeSim
from manager.client.rest import ApiClient, create_client
from manager.lifecycle.manager import Manager
from manager.testing import run_manager

# kubesim's --token-auth-file: token,user,uid[,groups]
TOKENS = {
    "reader": "reader-token",  # bound to the metrics-reader ClusterRole
    "debugger": "debugger-token",  # in group ops, which may get /debug/*
    "nobody": "nobody-token",  # authenticated, no rights
}
TOKEN_FILE = (
    "reader-token,metrics-reader,uid-reader\n"
    "debugger-token,debugger,uid-debugger,ops\n"
    "nobody-token,nobody,uid-nobody\n"
)
RBAC = "rbac.authorization.k8s.io/v1"
BINDINGS = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"


def cluster_role(name: str, urls: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": RBAC,
        "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": [{"nonResourceURLs": urls, "verbs": ["get"]}],
    }


def binding(name: str, role: str, subject: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": RBAC,
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", **subject}],
    }


GRANTS = [
    cluster_role("metrics-reader", ["/metrics"]),
    binding("metrics-reader", "metrics-reader", {"kind": "User", "name": "metrics-reader"}),
    cluster_role("debug-reader", ["/debug/*"]),
    binding("ops-debug", "debug-reader", {"kind": "Group", "name": "ops"}),
]


async def admin_client(sim: KubeSim) -> ApiClient:
    return await create_client(kubeconfig=sim.kubeconfig, qps=0)


@contextlib.asynccontextmanager
async def rbac_kubesim(tmp_path: Path) -> AsyncIterator[KubeSim]:
    """kubesim enforcing RBAC, with the token users above and their grants created over HTTP."""
    tokens = tmp_path / "tokens.csv"
    tokens.write_text(TOKEN_FILE)
    async with KubeSim(nodes=1, authorization_mode="RBAC", token_auth_file=tokens) as sim:
        client = await admin_client(sim)
        try:
            for grant in GRANTS:
                path = "/apis/rbac.authorization.k8s.io/v1/" + grant["kind"].lower() + "s"
                await client.request_json("POST", path, body=grant)
        finally:
            await client.close()
        yield sim


@contextlib.asynccontextmanager
async def secure_manager(sim: KubeSim, flags: Mapping[str, Any] | None = None) -> AsyncIterator[Manager]:
    """The manager (the ReplicaSet controller, so it has a cluster client) on HTTPS, its client the admin."""
    options = {"kubeconfig": sim.kubeconfig, "port": None, "secure_port": 0, **(flags or {})}
    async with run_manager(sim.url, ReplicaSetController, flags=options) as manager:
        assert manager.server.url.startswith("https://")
        yield manager


def no_verify() -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


async def fetch(
    url: str,
    token: str | None = None,
    *,
    headers: Mapping[str, str] | None = None,
    method: str = "GET",
    ssl_context: ssl.SSLContext | None = None,
) -> tuple[int, str]:
    """One request over HTTPS (the certificate not verified unless `ssl_context` says so)."""
    sent = dict(headers or {})
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, url, headers=sent, ssl=ssl_context or no_verify()) as response,
    ):
        return response.status, await response.text()
