"""Bad input to the secure port: no token, bad tokens, tokens without the right, a client certificate of
another CA, plain HTTP to the HTTPS port, oversized headers and request lines, garbage. Each is refused (401,
403, 400 or the TLS handshake fails), nothing behind the port is served, and the manager goes on: /healthz
answers and its controller still reconciles."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from itertools import product
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import trustme

from manager import PODS, REPLICASETS
from manager.lifecycle.manager import Manager
from manager.testing import wait_for
from tests.integration.controllers.replicaset.harness import NS, rs_manifest
from tests.integration.manager.lifecycle.secure_kit import (
    TOKENS,
    admin_client,
    fetch,
    no_verify,
    rbac_kubesim,
    secure_manager,
)

# (headers, the status they get on a path nobody granted them)
CREDENTIALS: dict[str, tuple[dict[str, str], int]] = {
    "none": ({}, 403),  # anonymous: authenticated as system:anonymous, then not allowed
    "basic-auth": ({"Authorization": "Basic dXNlcjpwYXNz"}, 403),  # not a bearer token: anonymous
    "bearer-without-token": ({"Authorization": "Bearer "}, 403),
    "unknown-token": ({"Authorization": "Bearer not-a-token"}, 401),
    "lowercase-scheme-unknown-token": ({"Authorization": "bearer still-not-a-token"}, 401),
    "token-with-spaces": ({"Authorization": "Bearer a b c"}, 401),
    "token-twice": ({"Authorization": f"Bearer {TOKENS['reader']} {TOKENS['reader']}"}, 401),
    "long-unknown-token": ({"Authorization": "Bearer " + "x" * 4000}, 401),
    "token-without-rights": ({"Authorization": f"Bearer {TOKENS['nobody']}"}, 403),
    "reader-elsewhere": ({"Authorization": f"Bearer {TOKENS['reader']}"}, 403),
}
PATHS = ["/debug/controllers", "/healthz/ping", "/no-such-path", "/debug/controllers?x=1", "/metrics/"]
# The reader may get /metrics, so it is tried there only with other verbs.
CASES: list[tuple[str, str, dict[str, str], int]] = [
    ("GET", path, headers, status) for (headers, status), path in product(CREDENTIALS.values(), PATHS)
]
CASES += [
    ("GET", "/metrics", headers, status)
    for name, (headers, status) in CREDENTIALS.items()
    if "reader" not in name
]
CASES += [
    (method, "/metrics", {"Authorization": f"Bearer {TOKENS['reader']}"}, 403)
    for method in ("POST", "PUT", "DELETE", "PATCH")
]
SERVED = ("workqueue_", "# HELP", '"controllers"')


async def raw_exchange(port: int, payload: bytes, context: ssl.SSLContext | None) -> bytes:
    """Send bytes (over TLS when `context`) and read what comes back until the server closes or 2 s pass."""
    reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port, ssl=context), 5.0)
    try:
        writer.write(payload)
        await writer.drain()
        with contextlib.suppress(TimeoutError):
            return await asyncio.wait_for(reader.read(65536), 2.0)
        return b""
    except (ConnectionError, ssl.SSLError):
        return b""
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError, ssl.SSLError):
            await writer.wait_closed()


async def still_reconciles(manager: Manager, client: Any, name: str) -> None:
    await client.create(REPLICASETS, rs_manifest(name, 2))

    async def pods() -> bool:
        listed = await client.list(PODS, NS, label_selector=f"app={name}")
        return len(listed["items"]) == 2

    await wait_for(pods, 10.0, message=f"the ReplicaSet {name}'s pods")


@pytest.mark.slow  # ~70 HTTPS exchanges and a ReplicaSet to converge: about 2 s
async def test_bad_requests_are_refused_and_the_manager_goes_on(tmp_path: Path) -> None:
    assert len(CASES) >= 50
    client_ca, other_ca = trustme.CA(), trustme.CA()
    ca_file = tmp_path / "client-ca.pem"
    client_ca.cert_pem.write_to_path(str(ca_file))
    async with (
        rbac_kubesim(tmp_path) as sim,
        secure_manager(sim, {"client_ca_file": str(ca_file)}) as manager,
    ):
        url, port = manager.server.url, manager.server.port
        refused: list[tuple[str, str, int]] = []
        for method, path, headers, expected in CASES:
            status, body = await fetch(url + path, headers=headers, method=method)
            assert not any(mark in body for mark in SERVED), (method, path, headers)
            refused.append((method, path, status))
            assert status == expected, (method, path, headers, body)

        # a client certificate of another CA: the handshake fails
        stranger = no_verify()
        other_ca.issue_cert("x", common_name="metrics-reader").configure_cert(stranger)
        with pytest.raises(aiohttp.ClientError):
            await fetch(url + "/metrics", ssl_context=stranger)
        # plain HTTP to the HTTPS port: no HTTP answer at all
        answer = await raw_exchange(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", None)
        assert not answer.startswith(b"HTTP/") and b"workqueue_" not in answer
        # oversized headers and request line, and garbage, over TLS: 400, even with a good token
        token = f"Authorization: Bearer {TOKENS['reader']}\r\n".encode()
        raw_cases = [
            b"GET /metrics HTTP/1.1\r\nHost: x\r\n" + token + b"X-Big: " + b"a" * 20000 + b"\r\n\r\n",
            b"GET /metrics?" + b"a" * 20000 + b" HTTP/1.1\r\nHost: x\r\n" + token + b"\r\n",
            b"\x00\x01\x02garbage\r\n\r\n",
            b"GET /metrics HTTP/1.1\r\n"
            + token
            + b"".join(b"X-%d: y\r\n" % i for i in range(2000))
            + b"\r\n",
        ]
        for payload in raw_cases:
            answer = await raw_exchange(port, payload, no_verify())
            assert answer.startswith((b"HTTP/1.0 400", b"HTTP/1.1 400")), answer[:80]
            assert b"workqueue_" not in answer

        # the manager is unaffected: health, metrics for whoever may read them, and its controller
        assert await fetch(url + "/healthz") == (200, "ok")
        status, body = await fetch(url + "/metrics", TOKENS["reader"])
        assert status == 200 and "workqueue_adds_total" in body
        admin = await admin_client(sim)
        try:
            await still_reconciles(manager, admin, "after-bad-input")
        finally:
            await admin.close()
