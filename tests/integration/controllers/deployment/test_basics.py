"""A Deployment creates its ReplicaSet, rolls out, and records revision, events and conditions as upstream."""

from __future__ import annotations

from manager import DEPLOYMENTS
from tests.integration.controllers.deployment.harness import (
    NS,
    REVISION,
    cluster,
    condition,
    deployment_manifest,
    events,
    pods,
    replicasets,
    set_image,
    wait_rolled_out,
)


async def test_create_rolls_out_with_revision_conditions_and_events() -> None:
    async with cluster() as env:
        await env.client.create(DEPLOYMENTS, deployment_manifest("web", 3), NS)
        d = await wait_rolled_out(env.client, "web")
        (rs,) = await replicasets(env.client, "web")
        hash_label = rs["metadata"]["labels"]["pod-template-hash"]
        assert rs["metadata"]["name"] == f"web-{hash_label}"
        assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": hash_label}
        assert rs["metadata"]["annotations"][REVISION] == "1"
        assert rs["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"] == "3"
        assert rs["metadata"]["annotations"]["deployment.kubernetes.io/max-replicas"] == "4"
        assert d["metadata"]["annotations"][REVISION] == "1"
        assert [c["type"] for c in d["status"]["conditions"]] == ["Available", "Progressing"]
        progressing = condition(d, "Progressing")
        assert progressing is not None and progressing["reason"] == "NewReplicaSetAvailable"
        assert progressing["message"] == f'ReplicaSet "web-{hash_label}" has successfully progressed.'
        available = condition(d, "Available")
        assert available is not None and available["reason"] == "MinimumReplicasAvailable"
        scaled = await events(env.client, "web", "ScalingReplicaSet")
        assert [e["message"] for e in scaled] == [f"Scaled up replica set web-{hash_label} from 0 to 3"]
        assert len(await pods(env.client, "web")) == 3


async def test_set_image_rolls_to_a_second_revision() -> None:
    async with cluster() as env:
        await env.client.create(DEPLOYMENTS, deployment_manifest("web", 4), NS)
        await wait_rolled_out(env.client, "web")
        await set_image(env.client, "web", "nginx:2")
        d = await wait_rolled_out(env.client, "web")
        old, new = await replicasets(env.client, "web")
        assert old["spec"]["replicas"] == 0 and new["spec"]["replicas"] == 4
        assert new["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:2"
        assert new["metadata"]["annotations"][REVISION] == "2"
        assert d["metadata"]["annotations"][REVISION] == "2"
        running = [p for p in await pods(env.client, "web") if not p["metadata"].get("deletionTimestamp")]
        assert {p["spec"]["containers"][0]["image"] for p in running} <= {"nginx:2"}
