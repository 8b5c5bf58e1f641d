"""Configuration loading (kubernetes-asyncio loaders) turned into base URL, SSL context and auth headers."""

from __future__ import annotations

import shutil
import ssl
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from manager.client.config import load_config
from tests.helpers import exec_plugin_user, write_kubeconfig


def kubeconfig(tmp_path: Path, server: str, user: dict[str, Any]) -> str:
    return write_kubeconfig(tmp_path, {"server": server, "insecure-skip-tls-verify": True}, user)


def exec_plugin(tmp_path: Path, expiry: str | None) -> dict[str, Any]:
    """An exec credential plugin that counts its runs in a file and returns token-<run>."""
    counter = tmp_path / "runs"
    counter.write_text("0")
    status = '{"token": "token-%d"' + (f', "expirationTimestamp": "{expiry}"' if expiry else "") + "}"
    script = (
        "import pathlib,json;"
        f"p=pathlib.Path({str(counter)!r});n=int(p.read_text())+1;p.write_text(str(n));"
        "print(json.dumps({'apiVersion':'client.authentication.k8s.io/v1','kind':'ExecCredential',"
        f"'status':json.loads({status!r} % n)}}))"
    )
    return exec_plugin_user(script)


def runs(tmp_path: Path) -> int:
    return int((tmp_path / "runs").read_text())


async def test_token_and_master_override(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path, "https://10.0.0.1:6443", {"token": "abc"})
    config = await load_config(kubeconfig=path)
    assert config.host == "https://10.0.0.1:6443"
    assert (await config.auth_headers())["Authorization"] == "Bearer abc"
    assert isinstance(config.ssl_context, ssl.SSLContext)
    assert config.ssl_context.verify_mode == ssl.CERT_NONE  # insecure-skip-tls-verify
    overridden = await load_config(kubeconfig=path, master="http://127.0.0.1:8080")
    assert overridden.host == "http://127.0.0.1:8080" and overridden.ssl_context is None
    assert (await overridden.auth_headers())["Authorization"] == "Bearer abc"


async def test_master_alone_has_no_credentials() -> None:
    config = await load_config(master="http://127.0.0.1:8080/")
    assert config.host == "http://127.0.0.1:8080"
    assert "Authorization" not in await config.auth_headers()
    assert config.auth_headers_now() == await config.auth_headers()


@pytest.mark.parametrize(
    "user",
    [{"token": "abc"}, {"username": "ann", "password": "secret"}, {}],
    ids=["token", "basic", "none"],
)
async def test_headers_now_are_the_awaited_headers(tmp_path: Path, user: dict[str, Any]) -> None:
    # The per-request path takes auth_headers_now() and awaits auth_headers() only when it says None.
    config = await load_config(kubeconfig=kubeconfig(tmp_path, "http://127.0.0.1:1", user))
    now = config.auth_headers_now()
    assert now is not None and now == await config.auth_headers()
    if user:
        assert now["Authorization"].startswith("Bearer " if "token" in user else "Basic ")


async def test_headers_now_defer_a_due_exec_plugin_run(tmp_path: Path) -> None:
    plugin = exec_plugin(tmp_path, "2000-01-01T00:00:00Z")  # expired: every use must run the plugin
    config = await load_config(kubeconfig=kubeconfig(tmp_path, "http://127.0.0.1:1", plugin))
    assert config.auth_headers_now() is None
    before = runs(tmp_path)
    assert (await config.auth_headers())["Authorization"].startswith("Bearer token-")
    assert runs(tmp_path) == before + 1


async def test_exec_plugin_runs_once_then_on_401(tmp_path: Path) -> None:
    config = await load_config(
        kubeconfig=kubeconfig(tmp_path, "http://127.0.0.1:1", exec_plugin(tmp_path, None))
    )
    assert runs(tmp_path) == 1
    for _ in range(3):
        assert (await config.auth_headers())["Authorization"] == "Bearer token-1"
    assert runs(tmp_path) == 1  # no process per request
    await config.refresh_after_unauthorized()
    assert (await config.auth_headers())["Authorization"] == "Bearer token-2"
    assert runs(tmp_path) == 2


async def test_expired_exec_credential_is_refreshed(tmp_path: Path) -> None:
    plugin = exec_plugin(tmp_path, "2000-01-01T00:00:00Z")
    config = await load_config(kubeconfig=kubeconfig(tmp_path, "http://127.0.0.1:1", plugin))
    first = (await config.auth_headers())["Authorization"]
    second = (await config.auth_headers())["Authorization"]
    assert first != second and runs(tmp_path) >= 3  # expired at once: every use asks the plugin again


async def test_valid_exec_credential_is_reused(tmp_path: Path) -> None:
    plugin = exec_plugin(tmp_path, "2999-01-01T00:00:00Z")
    config = await load_config(kubeconfig=kubeconfig(tmp_path, "http://127.0.0.1:1", plugin))
    for _ in range(3):
        assert (await config.auth_headers())["Authorization"] == "Bearer token-1"
    assert runs(tmp_path) == 1


async def test_master_without_scheme_means_https(tmp_path: Path) -> None:
    config = await load_config(master="10.0.0.1:6443")
    assert config.host == "https://10.0.0.1:6443" and config.ssl_context is not None
    path = kubeconfig(tmp_path, "http://127.0.0.1:1", {"token": "t"})
    overridden = await load_config(kubeconfig=path, master="example.test:6443")
    assert overridden.host == "https://example.test:6443"
    assert (await load_config(master="http://127.0.0.1:8080")).host == "http://127.0.0.1:8080"


def test_importing_the_client_does_not_import_kubernetes_asyncio() -> None:
    """kubernetes-asyncio costs most of a second to import: only loading a configuration pays for it."""
    code = "import sys, manager.client; print('kubernetes_asyncio' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def service_account(tmp_path: Path) -> Path:
    """A fake service-account mount: a token and a self-signed CA certificate."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is not installed: cannot make the fake service-account CA")
    mount = tmp_path / "serviceaccount"
    mount.mkdir()
    (mount / "token").write_text("sa-token-1")
    files = ["-keyout", str(mount / "ca.key"), "-out", str(mount / "ca.crt")]
    command = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=ca"]
    subprocess.run([*command, *files], check=True, capture_output=True)
    return mount


async def test_in_cluster_config_from_the_service_account_mount(tmp_path: Path) -> None:
    mount = service_account(tmp_path)
    env = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    config = await load_config(environ=env, service_account_dir=str(mount))
    assert config.host == "https://10.96.0.1:443"
    assert config.ssl_context is not None and config.ssl_context.verify_mode == ssl.CERT_REQUIRED
    assert await config.auth_headers() == {"Authorization": "Bearer sa-token-1"}
    ipv6 = await load_config(
        environ={**env, "KUBERNETES_SERVICE_HOST": "fd00::1"}, service_account_dir=str(mount)
    )
    assert ipv6.host == "https://[fd00::1]:443"


async def test_in_cluster_config_without_a_token_fails(tmp_path: Path) -> None:
    from manager.client.config import ConfigError

    mount = service_account(tmp_path)
    (mount / "token").unlink()
    env = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    with pytest.raises(ConfigError, match=r"in-cluster configuration .* token"):
        await load_config(environ=env, service_account_dir=str(mount))


async def test_a_plain_refresh_hook_runs_on_every_request_without_a_coroutine(tmp_path: Path) -> None:
    # The in-cluster loader's hook is a plain function (re-read the rotated token file when due): the
    # per-request path runs it itself, each time, and sends the token it leaves.
    config = await load_config(kubeconfig=kubeconfig(tmp_path, "http://127.0.0.1:1", {"token": "t0"}))
    cfg = config._configuration
    calls: list[int] = []

    def rotate(configuration: Any) -> None:
        calls.append(1)
        configuration.api_key["BearerToken"] = f"t{len(calls)}"

    cfg.refresh_api_key_hook = rotate
    assert [(config.auth_headers_now() or {}).get("Authorization") for _ in range(3)] == [
        "Bearer t1",
        "Bearer t2",
        "Bearer t3",
    ]
    assert (await config.auth_headers())["Authorization"] == "Bearer t4"


async def test_a_coroutine_refresh_hook_is_left_to_auth_headers(tmp_path: Path) -> None:
    config = await load_config(kubeconfig=kubeconfig(tmp_path, "http://127.0.0.1:1", {"token": "t0"}))
    cfg = config._configuration
    calls: list[int] = []

    async def rotate(configuration: Any) -> None:
        calls.append(1)
        configuration.api_key["BearerToken"] = f"async-{len(calls)}"

    def hands_back_a_coroutine(configuration: Any) -> Any:
        return rotate(configuration)

    for hook in (rotate, hands_back_a_coroutine):
        cfg.refresh_api_key_hook = hook
        assert config.auth_headers_now() is None
        assert (await config.auth_headers())["Authorization"] == f"Bearer async-{len(calls)}"
        assert config.auth_headers_now() is None  # and stays so: never run without being awaited
    assert len(calls) == 2


async def test_in_cluster_headers_are_taken_without_a_coroutine(tmp_path: Path) -> None:
    mount = service_account(tmp_path)
    env = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    config = await load_config(environ=env, service_account_dir=str(mount))
    now = config.auth_headers_now()
    assert now is not None and now == await config.auth_headers()
    assert now["Authorization"].startswith("Bearer ")
