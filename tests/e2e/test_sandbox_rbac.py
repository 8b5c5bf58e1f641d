"""`aiokcm --sandbox` as a user runs it (`make run`'s flags), with RBAC enforced: kubesim serves HTTPS with
its own CA, kubectl's kubeconfig is the admin, and the manager runs as its ServiceAccount bound to the roles
`aiokcm rbac` generates for the enabled controllers; the sample workloads converge without one 403."""

from __future__ import annotations

import asyncio
import shutil
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from controllers.pipeline import PIPELINES
from manager import DEPLOYMENTS, JOBS
from manager.client.rest import ApiClient, create_client
from tests.helpers import run_kubectl, wait_for

REPO = Path(__file__).resolve().parents[2]
AIOKCM = str(Path(sys.executable).with_name("aiokcm"))
SAMPLES = ("job-plain.yaml", "job-retry.yaml", "deployment.yaml", "pipeline.yaml")

pytestmark = pytest.mark.slow  # the samples' pods run for seconds


def condition_true(obj: dict[str, Any], kind: str) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c.get("type") == kind and c.get("status") == "True" for c in conditions)


async def converged(client: ApiClient) -> bool:
    plain = await client.get(JOBS, "sample-plain", "default")
    retry = await client.get(JOBS, "sample-retry", "default")
    hello = await client.get(DEPLOYMENTS, "hello", "default")
    pipeline = await client.get(PIPELINES, "sample-pipeline", "default")
    return (
        condition_true(plain, "Complete")
        and condition_true(retry, "Complete")
        and (hello.get("status") or {}).get("availableReplicas") == hello["spec"]["replicas"]
        and (pipeline.get("status") or {}).get("phase") == "Succeeded"
    )


async def test_the_samples_converge_with_the_generated_roles_only(tmp_path: Path) -> None:
    applied = [str(REPO / "config" / "crd")] + [str(REPO / "config" / "samples" / s) for s in SAMPLES]
    log = tmp_path / "aiokcm.log"
    with log.open("wb") as output:
        process = await asyncio.create_subprocess_exec(
            AIOKCM,
            "--sandbox",
            f"--sandbox-apply={','.join(applied)}",
            "--controllers=*,pipeline",
            "--port=0",
            "--log-format=json",
            cwd=tmp_path,
            stdout=output,
            stderr=asyncio.subprocess.STDOUT,
        )
    try:
        await wait_for(
            lambda: "sandbox manifests applied" in log.read_text() or process.returncode is not None,
            timeout=30,
            message="the sandbox to start",
        )
        printed = log.read_text()
        assert "the manager runs as system:serviceaccount:kube-system:aiokcm" in printed, printed
        kubeconfig = tmp_path / ".sandbox" / "kubeconfig"
        assert "server: https://127.0.0.1:" in kubeconfig.read_text()
        client = await create_client(kubeconfig=str(kubeconfig))
        try:
            await wait_for(lambda: converged(client), timeout=45, interval=0.2, message="the samples")
        finally:
            await client.close()
        if shutil.which("kubectl"):
            manager_kubeconfig = tmp_path / ".sandbox" / "manager-kubeconfig"
            code, out, _ = await run_kubectl(manager_kubeconfig, tmp_path / "cache", "auth", "whoami")
            assert code == 0 and "system:serviceaccount:kube-system:aiokcm" in out
            code, out, _ = await run_kubectl(
                manager_kubeconfig, tmp_path / "cache", "auth", "can-i", "create", "secrets"
            )
            assert (code, out) == (1, "no\n")
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(process.wait(), 20) == 0
    printed = log.read_text()
    assert "Forbidden" not in printed and "forbidden" not in printed, printed
