"""Pure logic of secure serving: the TTL cache, path patterns, bearer tokens, users of client certificates,
the self-signed certificate and the settings that configure it."""

from __future__ import annotations

import ipaddress
import ssl
from pathlib import Path

import pytest
import trustme
from aiohttp.test_utils import make_mocked_request
from cryptography import x509
from pydantic import ValidationError

from manager.cli.sandbox import metrics_hint
from manager.config.settings import Settings
from manager.lifecycle.secure import ServingTLS
from manager.lifecycle.secure.certs import CERT_NAME, KEY_NAME, ensure_self_signed, self_signed_pem
from manager.lifecycle.secure.delegated import TTLCache, UserInfo, user_of_certificate
from manager.lifecycle.secure.filter import bearer_token, path_matcher


def test_cache_entries_expire_after_their_own_ttl() -> None:
    now = [100.0]
    cache: TTLCache[str] = TTLCache(clock=lambda: now[0])
    cache.put("short", "a", 1.0)
    cache.put("long", "b", 10.0)
    cache.put("never", "c", 0.0)  # a TTL of 0 caches nothing
    assert (cache.get("short"), cache.get("long"), cache.get("never")) == ("a", "b", None)
    now[0] = 101.0
    assert (cache.get("short"), cache.get("long")) == (None, "b")
    now[0] = 110.0
    assert cache.get("long") is None and len(cache) == 0


def test_a_full_cache_drops_expired_entries_then_the_oldest() -> None:
    now = [0.0]
    cache: TTLCache[int] = TTLCache(clock=lambda: now[0], size=3)
    cache.put("old", 1, 1.0)
    cache.put("a", 2, 100.0)
    cache.put("b", 3, 100.0)
    now[0] = 5.0
    cache.put("c", 4, 100.0)  # "old" expired: room without dropping a live one
    assert [cache.get(k) for k in ("a", "b", "c")] == [2, 3, 4]
    cache.put("d", 5, 100.0)  # all live: the oldest goes
    assert cache.get("a") is None and cache.get("d") == 5 and len(cache) == 3


@pytest.mark.parametrize(
    ("path", "allowed"),
    [
        ("/healthz", True),
        ("/healthz/ping", False),  # exact, as apiserver's always-allow paths
        ("/healthzz", False),
        ("/debug/pprof/heap", True),  # "/debug/pprof/*" matches a prefix
        ("/debug/pprof", False),
        ("/metrics", False),
    ],
)
def test_always_allow_path_patterns(path: str, allowed: bool) -> None:
    assert path_matcher(["/healthz", "/readyz", "/debug/pprof/*"])(path) is allowed


@pytest.mark.parametrize(
    ("header", "token"),
    [
        (None, None),
        ("Bearer abc", "abc"),
        ("bearer   abc  ", "abc"),
        ("Bearer", None),
        ("Bearer    ", None),
        ("Basic dXNlcjpwYXNz", None),
        ("Bearer a b", "a b"),  # not a valid token: the API server refuses it (401)
    ],
)
def test_bearer_token_of_the_authorization_header(header: str | None, token: str | None) -> None:
    headers = {"Authorization": header} if header is not None else {}
    assert bearer_token(make_mocked_request("GET", "/metrics", headers=headers)) == token


def test_the_user_of_a_client_certificate_is_its_cn_with_its_organizations_as_groups() -> None:
    subject = ((("organizationName", "ops"),), (("organizationName", "sre"),), (("commonName", "alice"),))
    user = user_of_certificate({"subject": subject})
    assert user == UserInfo("alice", ("ops", "sre", "system:authenticated"))
    assert user_of_certificate({"subject": ((("organizationName", "ops"),),)}) is None


def test_the_self_signed_certificate_names_localhost_and_the_bind_address() -> None:
    cert_pem, key_pem = self_signed_pem("10.1.2.3")
    cert = x509.load_pem_x509_certificate(cert_pem)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "localhost" in names.get_values_for_type(x509.DNSName)
    ips = names.get_values_for_type(x509.IPAddress)
    assert ipaddress.ip_address("127.0.0.1") in ips and ipaddress.ip_address("10.1.2.3") in ips
    assert b"PRIVATE KEY" in key_pem


def test_the_cert_dir_pair_is_made_once_private_and_then_reused(tmp_path: Path) -> None:
    cert, key = ensure_self_signed(tmp_path / "certs", "0.0.0.0")
    assert (cert.name, key.name) == (CERT_NAME, KEY_NAME)
    assert key.stat().st_mode & 0o777 == 0o600
    first = cert.read_bytes()
    assert ensure_self_signed(tmp_path / "certs", "0.0.0.0") == (cert, key)
    assert cert.read_bytes() == first


def test_tls_cert_and_key_files_go_together() -> None:
    with pytest.raises(ValidationError, match="--tls-cert-file and --tls-private-key-file"):
        Settings.load({"tls_cert_file": "/etc/tls.crt"})
    settings = Settings.load({"tls_cert_file": "a.crt", "tls_private_key_file": "a.key"})
    assert settings.port is None and settings.secure_port == 10257


def test_always_allow_paths_take_a_comma_list() -> None:
    assert Settings.load(
        {"authorization_always_allow_paths": "/healthz, /metrics"}
    ).authorization_always_allow_paths == [
        "/healthz",
        "/metrics",
    ]


def test_client_certificates_are_trusted_from_the_client_ca_only(tmp_path: Path) -> None:
    ca_file = tmp_path / "ca.pem"
    trustme.CA().cert_pem.write_to_path(str(ca_file))
    assert ServingTLS(None, None).context.verify_mode == ssl.CERT_NONE  # no client certificates asked for
    context = ServingTLS(None, None, client_ca_file=str(ca_file)).context
    assert context.verify_mode == ssl.CERT_OPTIONAL  # a token remains the other way in
    assert len(context.get_ca_certs()) == 1


def test_the_sandbox_prints_how_to_read_metrics(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("users: [{name: u, user: {token: abc}}]\n")
    secure = metrics_hint(Settings.load({"secure_port": "10300"}), kubeconfig)
    assert secure == 'curl -k -H "Authorization: Bearer abc" https://127.0.0.1:10300/metrics'
    assert "$TOKEN" in metrics_hint(Settings.load(), tmp_path / "missing")
    assert metrics_hint(Settings.load({"port": "8080"}), kubeconfig) == "curl http://127.0.0.1:8080/metrics"
