"""Small helpers shared by the test suite: waiting on conditions, never sleeping as synchronisation."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import yaml

from manager.testing import wait_for as wait_for  # the suite waits as the authors' kit does

if TYPE_CHECKING:
    from manager.config.settings import Settings

T = TypeVar("T")

# Leader-election timings short enough for tests (lease duration, renew deadline, retry period).
LEASE, RENEW, RETRY = 2.0, 1.5, 0.3


def wait_for_sync(
    condition: Callable[[], T | None],
    timeout: float = 10.0,
    interval: float = 0.02,
    message: str = "condition",
) -> T:
    """Blocking variant of `wait_for` for tests that drive subprocesses."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {message}; last value: {result!r}")
        time.sleep(interval)


def write_kubeconfig(directory: Path, cluster: dict[str, Any], user: dict[str, Any]) -> str:
    """A one-context kubeconfig (`cluster` holds server, CA...; `user` the credentials) in `directory`."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": cluster}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    path = directory / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return str(path)


def exec_plugin_user(script: str) -> dict[str, Any]:
    """A kubeconfig user whose credentials come from an exec plugin: `python -c script`."""
    return {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": sys.executable,
            "args": ["-c", script],
            "interactiveMode": "Never",
        }
    }


def manager_settings(master: str, lease_name: str, **overrides: Any) -> Settings:
    """Settings of an in-process Manager against `master`: an ephemeral port on localhost and the short
    leader-election timings above, on the Lease `kube-system/<lease_name>`."""
    from manager.config.settings import Settings

    values: dict[str, Any] = {
        "master": master,
        "port": 0,
        "bind_address": "127.0.0.1",
        "leader_elect_lease_duration": LEASE,
        "leader_elect_renew_deadline": RENEW,
        "leader_elect_retry_period": RETRY,
        "leader_elect_resource_name": lease_name,
        **overrides,
    }
    return Settings(**values)


async def run_kubectl(
    kubeconfig: str | Path, cache_dir: str | Path, *args: str, timeout: float = 60.0
) -> tuple[int, str, str]:
    """kubectl as a subprocess without blocking the event loop (the manager under test runs on it):
    (exit code, stdout, stderr). `cache_dir` keeps its discovery cache per test."""
    process = await asyncio.create_subprocess_exec(
        "kubectl",
        f"--kubeconfig={kubeconfig}",
        f"--cache-dir={cache_dir}",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(), timeout)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise
    return process.returncode or 0, out.decode(), err.decode()


def schemaless_crd(
    group: str,
    kind: str,
    *,
    plural: str | None = None,
    scope: str = "Namespaced",
    versions: tuple[str, ...] = ("v1",),
) -> dict[str, Any]:
    """A CustomResourceDefinition whose objects may hold anything (preserve-unknown-fields); the first
    version is the storage version."""
    plural = plural or kind.lower() + "s"
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": scope,
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
            "versions": [
                {"name": v, "served": True, "storage": i == 0, "schema": schema}
                for i, v in enumerate(versions)
            ],
        },
    }
