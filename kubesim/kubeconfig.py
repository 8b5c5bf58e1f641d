"""Writing a kubeconfig that points kubectl and client libraries at a running kubesim."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import yaml

from kubesim.auth.authn import ADMIN_TOKEN

__all__ = ["ADMIN_TOKEN", "kubeconfig_text", "write_kubeconfig"]  # the token: for clients acting as the admin


def kubeconfig_text(
    url: str, name: str = "kubesim", ca_pem: str | None = None, token: str = ADMIN_TOKEN
) -> str:
    """A kubeconfig for `url` whose user sends `token` (kubesim's admin by default); `ca_pem` (the CA that
    signed kubesim's TLS certificate) is embedded as certificate-authority-data, as kubeadm writes it."""
    cluster: dict[str, str] = {"server": url}
    if ca_pem:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem.encode()).decode()
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": cluster}],
        "users": [{"name": name, "user": {"token": token}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name, "namespace": "default"}}],
        "current-context": name,
        "preferences": {},
    }
    return yaml.safe_dump(config, sort_keys=False)


def write_kubeconfig(
    path: str | os.PathLike[str], url: str, ca_pem: str | None = None, token: str = ADMIN_TOKEN
) -> Path:
    """Write atomically (rename) so a reader polling for the file never sees half of it; owner-only, as it
    holds a token."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as file:
        file.write(kubeconfig_text(url, ca_pem=ca_pem, token=token))
    os.replace(tmp, target)
    return target
