"""Secure serving against kubesim enforcing RBAC over HTTP: the manager's HTTPS port asks kubesim's real
TokenReview and SubjectAccessReview APIs who a caller is and what it may read, as kube-controller-manager's
secure port asks kube-apiserver."""

from __future__ import annotations

import json
import ssl
from pathlib import Path

import aiohttp
import pytest
import trustme

from controllers.replicaset import ReplicaSetController
from kubesim import KubeSim
from manager.cli.rbac import ControllerRbac, Identity, rbac_documents
from manager.client.rest import create_client
from manager.lifecycle.secure import DelegatedAuth
from manager.lifecycle.secure.certs import CERT_NAME, KEY_NAME
from tests.helpers import write_kubeconfig
from tests.integration.manager.lifecycle.secure_kit import (
    BINDINGS,
    TOKENS,
    admin_client,
    binding,
    fetch,
    rbac_kubesim,
    secure_manager,
)


@pytest.fixture
async def sim(tmp_path: Path) -> KubeSim:  # type: ignore[misc]
    async with rbac_kubesim(tmp_path) as running:
        yield running


def status_of(body: str) -> dict[str, object]:
    status: dict[str, object] = json.loads(body)
    assert status["kind"] == "Status" and status["status"] == "Failure"
    return status


async def test_health_is_open_and_metrics_need_a_user_allowed_to_get_them(sim: KubeSim) -> None:
    async with secure_manager(sim) as manager:
        url = manager.server.url
        for path in ("/healthz", "/readyz", "/livez"):
            assert await fetch(url + path) == (200, "ok"), path

        status, body = await fetch(url + "/metrics")
        assert status == 403  # anonymous, then not allowed: as kube-controller-manager answers
        assert status_of(body)["message"] == 'forbidden: User "system:anonymous" cannot get path "/metrics"'

        status, body = await fetch(url + "/metrics", "not-a-token")
        assert (status, status_of(body)["reason"], status_of(body)["message"]) == (
            401,
            "Unauthorized",
            "Unauthorized",
        )

        status, body = await fetch(url + "/metrics", TOKENS["nobody"])
        assert status == 403 and 'User "nobody" cannot get path "/metrics"' in status_of(body)["message"]  # type: ignore[operator]

        status, body = await fetch(url + "/metrics", TOKENS["reader"])
        assert status == 200 and "workqueue_adds_total" in body
        # the reader may get /metrics only; ops may get /debug/*
        assert (await fetch(url + "/debug/controllers", TOKENS["reader"]))[0] == 403
        status, body = await fetch(url + "/debug/controllers", TOKENS["debugger"])
        assert status == 200 and json.loads(body)["controllers"][0]["name"] == "replicaset-controller"
        # exact paths, as apiserver's always-allow path authorizer: /healthz/<check> is not /healthz
        assert (await fetch(url + "/healthz/ping"))[0] == 403
        assert (await fetch(url + "/metrics", TOKENS["reader"], method="POST"))[0] == 403  # verb "post"


async def test_answers_are_cached_until_their_ttl_and_a_revoked_grant_then_stops_working(
    sim: KubeSim,
) -> None:
    async with secure_manager(sim, {"authorization_webhook_cache_authorized_ttl": "1h"}) as manager:
        url, auth = manager.server.url, manager.server.auth
        assert auth is not None
        for _ in range(5):
            assert (await fetch(url + "/metrics", TOKENS["reader"]))[0] == 200
        assert auth.reviews_sent == 2  # one TokenReview, one SubjectAccessReview
        client = await admin_client(sim)
        try:
            await client.request_json("DELETE", f"{BINDINGS}/metrics-reader")
        finally:
            await client.close()
        # still allowed from the cache: the TTL is what bounds how long a revoked grant lasts
        assert (await fetch(url + "/metrics", TOKENS["reader"]))[0] == 200

    async with secure_manager(sim, {"authorization_webhook_cache_authorized_ttl": "0s"}) as manager:
        status, body = await fetch(manager.server.url + "/metrics", TOKENS["reader"])
        assert status == 403
        assert status_of(body)["message"] == 'forbidden: User "metrics-reader" cannot get path "/metrics"'


async def test_client_certificates_of_the_client_ca_are_users(sim: KubeSim, tmp_path: Path) -> None:
    client_ca, other_ca = trustme.CA(), trustme.CA()
    ca_file = tmp_path / "client-ca.pem"
    client_ca.cert_pem.write_to_path(str(ca_file))

    def client_context(ca: trustme.CA, name: str, group: str | None = None) -> ssl.SSLContext:
        context = ssl.create_default_context()
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        ca.issue_cert("client.example", common_name=name, organization_name=group).configure_cert(context)
        return context

    async with secure_manager(sim, {"client_ca_file": str(ca_file)}) as manager:
        url = manager.server.url
        reader = client_context(client_ca, "metrics-reader")
        assert (await fetch(url + "/metrics", ssl_context=reader))[0] == 200
        ops = client_context(client_ca, "someone", "ops")
        assert (await fetch(url + "/debug/controllers", ssl_context=ops))[0] == 200
        assert (await fetch(url + "/metrics", ssl_context=ops))[0] == 403
        with pytest.raises(aiohttp.ClientError):  # the handshake fails: not our client CA
            await fetch(url + "/metrics", ssl_context=client_context(other_ca, "metrics-reader"))
        assert (await fetch(url + "/healthz"))[0] == 200  # a client certificate stays optional


async def test_the_self_signed_certificate_is_kept_in_cert_dir_and_reused(
    sim: KubeSim, tmp_path: Path
) -> None:
    cert_dir = tmp_path / "certs"
    for start in range(2):
        async with secure_manager(sim, {"cert_dir": str(cert_dir)}) as manager:
            if start == 0:
                first = (cert_dir / CERT_NAME).read_bytes()
                assert oct((cert_dir / KEY_NAME).stat().st_mode & 0o777) == "0o600"
            assert (cert_dir / CERT_NAME).read_bytes() == first
            # verifiable with the certificate itself as CA, for 127.0.0.1
            verified = ssl.create_default_context(cafile=str(cert_dir / CERT_NAME))
            assert await fetch(manager.server.url + "/healthz", ssl_context=verified) == (200, "ok")


async def test_reviews_that_cannot_be_made_refuse_the_request_and_the_server_goes_on(sim: KubeSim) -> None:
    async with secure_manager(sim) as manager:
        # reviews sent to a closed port on 127.0.0.1: the API server unreachable
        unreachable = await create_client(master="http://127.0.0.1:9", qps=0)
        try:
            manager.server.delegate_reviews_to(unreachable)
            assert manager.server.auth is not None
            manager.server.auth.review_timeout = 0.3  # the client would retry far longer
            url = manager.server.url
            assert (await fetch(url + "/metrics", TOKENS["reader"]))[0] == 401  # token not reviewed
            status, body = await fetch(url + "/metrics")  # anonymous, access not reviewed
            assert status == 500 and status_of(body)["reason"] == "InternalError"
            assert await fetch(url + "/healthz") == (200, "ok")
        finally:
            await unreachable.close()


async def test_cache_ttls_follow_the_clock_for_each_answer(sim: KubeSim) -> None:
    """DelegatedAuth with a manual clock against kubesim's review APIs: an allowed answer lasts
    authorized_ttl, a refusal unauthorized_ttl, a token's user token_ttl."""
    now = [0.0]
    auth = DelegatedAuth(token_ttl=10.0, authorized_ttl=10.0, unauthorized_ttl=2.0, clock=lambda: now[0])
    auth.client = client = await admin_client(sim)
    try:
        reader = await auth.authenticate_token(TOKENS["reader"])
        assert reader is not None and reader.name == "metrics-reader"
        assert await auth.authenticate_token("not-a-token") is None
        assert auth.reviews_sent == 2
        assert (await auth.authorize(reader, "get", "/metrics")).allowed
        assert not (await auth.authorize(reader, "get", "/debug/controllers")).allowed
        assert auth.reviews_sent == 4

        await client.request_json(
            "POST",
            BINDINGS,
            body=binding("reader-debug", "debug-reader", {"kind": "User", "name": "metrics-reader"}),
        )
        await client.request_json("DELETE", f"{BINDINGS}/metrics-reader")
        now[0] = 1.9  # both answers still cached
        assert (await auth.authorize(reader, "get", "/metrics")).allowed
        assert not (await auth.authorize(reader, "get", "/debug/controllers")).allowed
        assert await auth.authenticate_token(TOKENS["reader"]) == reader
        assert auth.reviews_sent == 4
        now[0] = 2.1  # the refusal expired: asked again, now allowed
        assert (await auth.authorize(reader, "get", "/debug/controllers")).allowed
        assert (await auth.authorize(reader, "get", "/metrics")).allowed  # still the cached answer
        assert auth.reviews_sent == 5
        now[0] = 10.1  # the allowed answer and the token's user expired
        assert not (await auth.authorize(reader, "get", "/metrics")).allowed
        assert await auth.authenticate_token(TOKENS["reader"]) == reader
        assert auth.reviews_sent == 7
    finally:
        await client.close()


async def test_the_generated_rbac_lets_the_manager_review_as_its_service_account(
    sim: KubeSim, tmp_path: Path
) -> None:
    """The manager running as the aiokcm ServiceAccount with only what `aiokcm rbac` generates for it: its
    reviews are allowed, so the metrics reader reads /metrics and the others are refused as before."""
    identity = Identity()
    rs = ReplicaSetController
    documents = rbac_documents([ControllerRbac(rs.name, tuple(rs.rbac or ()))], identity)
    client = await admin_client(sim)
    try:
        accounts = f"/api/v1/namespaces/{identity.namespace}/serviceaccounts"
        account = {"kind": "ServiceAccount", "metadata": {"name": identity.service_account}}
        await client.request_json("POST", accounts, body={"apiVersion": "v1", **account})
        for document in documents:
            kind = document["kind"]
            namespace = document["metadata"].get("namespace")
            scope = f"namespaces/{namespace}/" if namespace else ""
            await client.request_json(
                "POST", f"/apis/rbac.authorization.k8s.io/v1/{scope}{kind.lower()}s", body=document
            )
        request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}
        path = f"{accounts}/{identity.service_account}/token"
        token = (await client.request_json("POST", path, body=request))["status"]["token"]
    finally:
        await client.close()
    kubeconfig = write_kubeconfig(tmp_path, {"server": sim.url}, {"token": token})
    async with secure_manager(sim, {"kubeconfig": kubeconfig}) as manager:
        url = manager.server.url
        assert (await fetch(url + "/metrics", TOKENS["reader"]))[0] == 200
        assert (await fetch(url + "/metrics", TOKENS["nobody"]))[0] == 403
        assert (await fetch(url + "/metrics", "not-a-token"))[0] == 401
