"""The HTTPS server's certificate: --tls-cert-file/--tls-private-key-file served and reloaded when the files
change (a broken pair keeps the old one in use), and bad files refused at start with the file named."""

from __future__ import annotations

import asyncio
import os
import ssl
from pathlib import Path

import pytest
import trustme

from manager.lifecycle.healthz import HealthChecks
from manager.lifecycle.secure import CertificateError, ServingTLS
from manager.lifecycle.server import HttpServer
from manager.testing import wait_for
from tests.integration.manager.lifecycle.secure_kit import fetch, no_verify


def install(leaf: trustme.LeafCert, cert: Path, key: Path) -> bytes:
    """Replace the pair the way a mounted Secret changes (new files renamed over the old); the DER served."""
    for path, pem in ((cert, leaf.cert_chain_pems[0].bytes()), (key, leaf.private_key_pem.bytes())):
        fresh = path.with_suffix(".new")
        fresh.write_bytes(pem)
        os.replace(fresh, path)
    return ssl.PEM_cert_to_DER_cert(leaf.cert_chain_pems[0].bytes().decode())


async def served_certificate(port: int) -> bytes | None:
    _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=no_verify())
    try:
        return writer.get_extra_info("ssl_object").getpeercert(binary_form=True)  # type: ignore[no-any-return]
    finally:
        writer.close()
        await writer.wait_closed()


async def test_the_certificate_files_are_served_and_reloaded_when_they_change(tmp_path: Path) -> None:
    ca = trustme.CA()
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    first = install(ca.issue_cert("127.0.0.1"), cert, key)
    tls = ServingTLS(cert, key, reload_interval=0.02)
    server = HttpServer(HealthChecks(), "127.0.0.1", 0, tls=tls)
    await server.start()
    try:
        assert await served_certificate(server.port) == first
        verified = ssl.create_default_context()
        ca.configure_trust(verified)
        assert await fetch(server.url + "/healthz", ssl_context=verified) == (200, "ok")

        key.write_text("half-written")  # not a key: the old pair stays in use
        assert tls.reload_if_changed() is False
        assert await served_certificate(server.port) == first

        second = install(ca.issue_cert("127.0.0.1"), cert, key)
        assert second != first

        async def serving_second() -> bool:
            return await served_certificate(server.port) == second

        await wait_for(serving_second, 5.0, message="the new certificate served")
        assert await fetch(server.url + "/healthz", ssl_context=verified) == (200, "ok")
    finally:
        await server.stop()


@pytest.mark.parametrize("broken", ["missing", "not-pem", "other-key"])
def test_a_bad_pair_is_refused_at_start_naming_the_file(tmp_path: Path, broken: str) -> None:
    ca = trustme.CA()
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    install(ca.issue_cert("127.0.0.1"), cert, key)
    if broken == "missing":
        key.unlink()
    elif broken == "not-pem":
        cert.write_text("hello")
    else:
        key.write_bytes(ca.issue_cert("127.0.0.1").private_key_pem.bytes())
    with pytest.raises(CertificateError, match=r"--tls-cert-file .*tls\.crt"):
        ServingTLS(cert, key)


def test_an_unreadable_client_ca_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CertificateError, match=r"--client-ca-file .*nope\.pem"):
        ServingTLS(None, None, client_ca_file=str(tmp_path / "nope.pem"))
