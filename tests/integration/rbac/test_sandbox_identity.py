"""The sandbox's RBAC mode in-process: kubesim over HTTPS, the manager's kubeconfig a ServiceAccount bound to
the generated roles of the enabled controllers only, following the controllers across restarts over a kept
data directory."""

from __future__ import annotations

import asyncio
import base64
import ssl
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from controllers.job import JobController
from controllers.ttlafterfinished import TTLAfterFinishedController
from manager.cli.sandbox import Sandbox
from manager.config.settings import Settings
from manager.testing import controller_info

AUTHZ = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"


async def manager_may(sandbox: Sandbox, verb: str, resource: str, group: str = "") -> bool:
    """SelfSubjectAccessReview with the manager's own kubeconfig (its token, kubesim's CA)."""
    text = await asyncio.to_thread(sandbox.manager_kubeconfig.read_text)
    config: dict[str, Any] = yaml.safe_load(text)
    ca = base64.b64decode(config["clusters"][0]["cluster"]["certificate-authority-data"]).decode()
    token = config["users"][0]["user"]["token"]
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": verb, "resource": resource, "group": group}},
    }
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        aiohttp.ClientSession(headers=headers) as session,
        session.post(
            f"{sandbox.url}{AUTHZ}", json=review, ssl=ssl.create_default_context(cadata=ca)
        ) as answer,
    ):
        assert answer.status == 201, await answer.text()
        return bool((await answer.json())["status"]["allowed"])


async def test_the_manager_gets_the_roles_of_the_enabled_controllers_only(tmp_path: Path) -> None:
    settings = Settings(sandbox=True, sandbox_data_dir=str(tmp_path / "cluster"))
    both = [controller_info(JobController), controller_info(TTLAfterFinishedController)]
    sandbox = await Sandbox.start(settings, both, kubeconfig=tmp_path / "kubeconfig")
    try:
        assert sandbox.url.startswith("https://127.0.0.1:")
        assert sandbox.manager_kubeconfig != sandbox.kubeconfig
        # blockOwnerDeletion needs update on the owner's finalizers, as on a real cluster
        assert sandbox._sim.admission_plugins == ("OwnerReferencesPermissionEnforcement",)
        assert await manager_may(sandbox, "update", "jobs/status", "batch")
        assert await manager_may(sandbox, "delete", "jobs", "batch")  # the TTL controller's
        assert not await manager_may(sandbox, "create", "secrets")
        assert not await manager_may(sandbox, "update", "deployments/status", "apps")
    finally:
        await sandbox.stop()
    only_jobs = [controller_info(JobController)]
    sandbox = await Sandbox.start(settings, only_jobs, kubeconfig=tmp_path / "kubeconfig")
    try:  # the kept cluster follows the flags: the TTL controller's role and binding are gone
        assert await manager_may(sandbox, "update", "jobs/status", "batch")
        assert not await manager_may(sandbox, "delete", "jobs", "batch")
    finally:
        await sandbox.stop()
