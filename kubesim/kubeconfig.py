"""Writing a kubeconfig that points kubectl and client libraries at a running kubesim."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import yaml

from kubesim.auth.authn import ADMIN_TOKEN


def kubeconfig_text(url: str, name: str = "kubesim", ca_pem: str | None = None) -> str:
    """A kubeconfig for `url`; `ca_pem` (the CA that signed kubesim's TLS certificate) is embedded as
    certificate-authority-data, as kubeadm writes it."""
    cluster: dict[str, str] = {"server": url}
    if ca_pem:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem.encode()).decode()
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": cluster}],
        "users": [{"name": name, "user": {"token": ADMIN_TOKEN}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name, "namespace": "default"}}],
        "current-context": name,
        "preferences": {},
    }
    return yaml.safe_dump(config, sort_keys=False)


def write_kubeconfig(path: str | os.PathLike[str], url: str, ca_pem: str | None = None) -> Path:
    """Write atomically (rename) so a reader polling for the file never sees half of it."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(kubeconfig_text(url, ca_pem=ca_pem))
    os.replace(tmp, target)
    return target
