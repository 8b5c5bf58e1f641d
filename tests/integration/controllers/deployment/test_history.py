"""Rollout history: cleanup to revisionHistoryLimit, `kubectl rollout undo` (previous and --to-revision) with
the re-stamped revision, the rollback annotation, and a pod-template-hash collision."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from controllers.deployment.hashing import compute_hash
from kubesim.kubeconfig import write_kubeconfig
from manager import DEPLOYMENTS, REPLICASETS
from tests.helpers import run_kubectl, wait_for
from tests.integration.controllers.deployment.harness import (
    NS,
    REVISION,
    cluster,
    deployment_manifest,
    events,
    get,
    replicasets,
    set_image,
    wait_rolled_out,
)

KUBECTL = shutil.which("kubectl")


async def kubectl(kubeconfig: Path, *args: str, timeout: float = 60.0) -> tuple[int, str]:
    """Run kubectl without blocking the loop; (exit code, stdout and stderr)."""
    assert KUBECTL is not None
    code, out, err = await run_kubectl(kubeconfig, kubeconfig.parent / "cache", *args, timeout=timeout)
    return code, out + err


def image_of(rs: dict[str, object]) -> str:
    spec = rs["spec"]
    assert isinstance(spec, dict)
    return str(spec["template"]["spec"]["containers"][0]["image"])


async def test_history_is_cleaned_up_to_the_limit_oldest_revisions_first() -> None:
    async with cluster() as env:
        await env.client.create(DEPLOYMENTS, deployment_manifest("web", 1, revisionHistoryLimit=2), NS)
        await wait_rolled_out(env.client, "web")
        for version in range(2, 6):
            await set_image(env.client, "web", f"nginx:{version}")
            await wait_rolled_out(env.client, "web")

        async def trimmed() -> list[str] | None:
            rss = await replicasets(env.client, "web")
            revisions = [rs["metadata"]["annotations"][REVISION] for rs in rss]
            return revisions if len(rss) == 3 else None

        assert await wait_for(trimmed, 10, message="history trimmed to 2 old ReplicaSets") == ["3", "4", "5"]


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
async def test_kubectl_rollout_undo_history_status_restart_and_scale(tmp_path: Path) -> None:
    async with cluster() as env:
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", env.url, ca_pem=env.sim.ca_pem)
        code, out = await kubectl(
            kubeconfig, "create", "deployment", "web", "--image=nginx:1", "--replicas=2"
        )
        assert code == 0, out
        code, out = await kubectl(kubeconfig, "rollout", "status", "deployment/web", "--timeout=20s")
        assert code == 0 and 'deployment "web" successfully rolled out' in out, out
        for version in (2, 3):
            code, out = await kubectl(kubeconfig, "set", "image", "deployment/web", f"nginx=nginx:{version}")
            assert code == 0, out
            code, out = await kubectl(kubeconfig, "rollout", "status", "deployment/web", "--timeout=20s")
            assert code == 0, out
        code, out = await kubectl(kubeconfig, "rollout", "history", "deployment/web")
        assert code == 0 and all(f"\n{n}  " in out for n in (1, 2, 3)), out

        code, out = await kubectl(kubeconfig, "rollout", "undo", "deployment/web")  # to revision 2
        assert code == 0 and "rolled back" in out, out
        d = await wait_rolled_out(env.client, "web")
        assert d["metadata"]["annotations"][REVISION] == "4"
        by_image = {image_of(rs): rs for rs in await replicasets(env.client, "web")}
        restamped = by_image["nginx:2"]["metadata"]["annotations"]
        assert restamped[REVISION] == "4" and restamped["deployment.kubernetes.io/revision-history"] == "2"

        code, out = await kubectl(kubeconfig, "rollout", "undo", "deployment/web", "--to-revision=1")
        assert code == 0, out
        d = await wait_rolled_out(env.client, "web")
        assert d["metadata"]["annotations"][REVISION] == "5"
        assert d["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1"
        code, out = await kubectl(kubeconfig, "rollout", "undo", "deployment/web", "--to-revision=42")
        assert code != 0 and "unable to find specified revision 42" in out, out

        code, out = await kubectl(kubeconfig, "rollout", "pause", "deployment/web")
        assert code == 0, out
        code, out = await kubectl(kubeconfig, "rollout", "undo", "deployment/web")
        assert code != 0 and "you cannot rollback a paused deployment" in out, out
        code, out = await kubectl(kubeconfig, "rollout", "resume", "deployment/web")
        assert code == 0, out
        code, out = await kubectl(kubeconfig, "rollout", "restart", "deployment/web")
        assert code == 0, out
        code, out = await kubectl(kubeconfig, "rollout", "status", "deployment/web", "--timeout=20s")
        assert code == 0, out
        assert (await get(env.client, "web"))["metadata"]["annotations"][REVISION] == "6"
        code, out = await kubectl(kubeconfig, "scale", "deployment/web", "--replicas=4")
        assert code == 0, out
        code, out = await kubectl(kubeconfig, "rollout", "status", "deployment/web", "--timeout=20s")
        assert code == 0, out
        assert (await get(env.client, "web"))["status"]["availableReplicas"] == 4


async def test_rollback_annotation_to_a_revision_and_to_a_missing_one() -> None:
    async with cluster() as env:
        await env.client.create(DEPLOYMENTS, deployment_manifest("web", 1), NS)
        await wait_rolled_out(env.client, "web")
        await set_image(env.client, "web", "nginx:2")
        await wait_rolled_out(env.client, "web")
        rollback = {"metadata": {"annotations": {"deprecated.deployment.rollback.to": "1"}}}
        await env.client.patch(DEPLOYMENTS, "web", rollback, NS)

        async def rolled_back() -> bool:
            d = await get(env.client, "web")
            return d["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1" and (
                "deprecated.deployment.rollback.to" not in d["metadata"]["annotations"]
            )

        await wait_for(rolled_back, 10, message="rolled back to revision 1")
        assert (await wait_rolled_out(env.client, "web"))["metadata"]["annotations"][REVISION] == "3"
        done = await events(env.client, "web", "DeploymentRollback")
        assert [e["message"] for e in done] == ['Rolled back deployment "web" to revision 1']

        missing = {"metadata": {"annotations": {"deprecated.deployment.rollback.to": "9"}}}
        await env.client.patch(DEPLOYMENTS, "web", missing, NS)

        async def given_up() -> list[str] | None:
            found = await events(env.client, "web", "DeploymentRollbackRevisionNotFound")
            d = await get(env.client, "web")
            cleared = "deprecated.deployment.rollback.to" not in d["metadata"]["annotations"]
            return [e["message"] for e in found] if found and cleared else None

        assert await wait_for(given_up, 10, message="rollback given up") == [
            "Unable to find the revision to rollback to."
        ]
        assert (await get(env.client, "web"))["spec"]["template"]["spec"]["containers"][0][
            "image"
        ] == "nginx:1"


async def test_hash_collision_bumps_collision_count_and_uses_another_name() -> None:
    async with cluster() as env:
        created = await env.client.create(DEPLOYMENTS, deployment_manifest("web", 2, paused=True), NS)
        template = created["spec"]["template"]
        taken = f"web-{compute_hash(template, None)}"
        squatter = deployment_manifest("other", 0)  # a different template under the name the Deployment wants
        squatter.update(apiVersion="apps/v1", kind="ReplicaSet")
        squatter["metadata"]["name"] = taken
        await env.client.create(REPLICASETS, squatter, NS)
        await env.client.patch(DEPLOYMENTS, "web", {"spec": {"paused": False}}, NS)
        d = await wait_rolled_out(env.client, "web")
        assert d["status"]["collisionCount"] == 1
        (rs,) = await replicasets(env.client, "web")
        assert rs["metadata"]["name"] == f"web-{compute_hash(template, 1)}" != taken
        assert rs["metadata"]["labels"]["pod-template-hash"] == compute_hash(template, 1)
        assert (await env.client.get(REPLICASETS, taken, NS))["metadata"].get("ownerReferences") is None
