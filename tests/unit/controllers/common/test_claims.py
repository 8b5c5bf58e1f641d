"""Controller-ref manager: adopt, release, ignore, the owner recheck, and the patch bodies."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.common.claims import ClaimError, ControllerRefManager, adopt_patch, release_patch
from controllers.common.podutil import Obj, Selector

OWNER: dict[str, Any] = {"metadata": {"name": "web", "namespace": "ns", "uid": "rs-uid"}}


class StatusError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class FakeServer:
    """Records patches; answers with a chosen error per pod name; serves the owner for the recheck."""

    def __init__(self, owner: dict[str, Any] | None = None) -> None:
        self.patches: list[tuple[str, str, Obj]] = []
        self.errors: dict[str, Exception] = {}
        self.owner = owner if owner is not None else OWNER
        self.owner_gets = 0

    async def patch(self, namespace: str, name: str, body: Obj) -> object:
        self.patches.append((namespace, name, body))
        if name in self.errors:
            raise self.errors[name]
        return {}

    async def get_owner(self) -> dict[str, Any]:
        self.owner_gets += 1
        if isinstance(self.owner, Exception):
            raise self.owner
        return self.owner


def pod(name: str, labels: dict[str, str], owner_uid: str | None = None, **meta: Any) -> Obj:
    metadata: dict[str, Any] = {"name": name, "namespace": meta.pop("namespace", "ns"), "uid": f"uid-{name}"}
    metadata["labels"] = labels
    if owner_uid:
        metadata["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "x", "uid": owner_uid, "controller": True}
        ]
    metadata.update(meta)
    return {"metadata": metadata}


def manager(server: FakeServer, owner: dict[str, Any] = OWNER, **kw: Any) -> ControllerRefManager:
    return ControllerRefManager(
        owner=owner,
        api_version="apps/v1",
        kind="ReplicaSet",
        selector=Selector.from_label_selector({"matchLabels": {"app": "web"}}),
        patch_pod=server.patch,
        recheck_owner=server.get_owner,
        **kw,
    )


MATCH = {"app": "web"}
OTHER = {"app": "db"}


async def test_claim_decisions() -> None:
    server = FakeServer()
    pods = [
        pod("mine", MATCH, "rs-uid"),
        pod("theirs", MATCH, "other-uid"),
        pod("drifted", OTHER, "rs-uid"),
        pod("orphan", MATCH),
        pod("stranger", OTHER),
        pod("dying-orphan", MATCH, deletionTimestamp="2026-01-01T00:00:00Z"),
        pod("elsewhere", MATCH, namespace="other"),
    ]
    claimed = await manager(server).claim_pods(pods)
    assert [p["metadata"]["name"] for p in claimed] == ["mine", "orphan"]
    assert [(ns, name) for ns, name, _ in server.patches] == [("ns", "drifted"), ("ns", "orphan")]
    assert server.patches[0][2] == release_patch("uid-drifted", ["rs-uid"])
    assert server.patches[1][2] == adopt_patch(OWNER, "apps/v1", "ReplicaSet", "uid-orphan")
    assert server.owner_gets == 1


async def test_recheck_happens_once_per_pass_and_only_when_adopting() -> None:
    server = FakeServer()
    mgr = manager(server)
    await mgr.claim_pods([pod("mine", MATCH, "rs-uid"), pod("drifted", OTHER, "rs-uid")])
    assert server.owner_gets == 0
    await mgr.claim_pods([pod("o1", MATCH), pod("o2", MATCH)])
    assert server.owner_gets == 1


async def test_owner_being_deleted_neither_adopts_nor_releases() -> None:
    server = FakeServer()
    deleting = {"metadata": {**OWNER["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"}}
    claimed = await manager(server, owner=deleting).claim_pods(
        [pod("mine", MATCH, "rs-uid"), pod("drifted", OTHER, "rs-uid"), pod("orphan", MATCH)]
    )
    assert [p["metadata"]["name"] for p in claimed] == ["mine"]
    assert server.patches == []


@pytest.mark.parametrize(
    ("fresh", "message"),
    [
        (
            {"metadata": {"name": "web", "namespace": "ns", "uid": "new-uid"}},
            "can't adopt Pod ns/o1 (uid-o1): can't recheck DeletionTimestamp: "
            "original ReplicaSet ns/web is gone: got uid new-uid, wanted rs-uid",
        ),
        (
            {"metadata": {"name": "web", "namespace": "ns", "uid": "rs-uid", "deletionTimestamp": "T"}},
            "can't adopt Pod ns/o1 (uid-o1): ns/web has just been deleted at T",
        ),
        (
            StatusError(404, 'replicasets.apps "web" not found'),
            "can't adopt Pod ns/o1 (uid-o1): can't recheck DeletionTimestamp: "
            'replicasets.apps "web" not found',
        ),
    ],
)
async def test_failed_recheck_fails_every_adoption(fresh: Any, message: str) -> None:
    server = FakeServer(owner=fresh)
    with pytest.raises(ClaimError) as info:
        await manager(server).claim_pods([pod("o1", MATCH), pod("mine", MATCH, "rs-uid"), pod("o2", MATCH)])
    assert len(info.value.errors) == 2
    assert str(info.value.errors[0]) == message
    assert str(info.value).startswith("[")
    assert server.patches == []
    assert server.owner_gets == 1


async def test_patch_errors() -> None:
    server = FakeServer()
    server.errors = {
        "gone-orphan": StatusError(404, "not found"),
        "gone-owned": StatusError(404, "not found"),
        "recreated": StatusError(422, "invalid"),
        "conflict": StatusError(409, "conflict"),
    }
    with pytest.raises(ClaimError) as info:
        await manager(server).claim_pods(
            [
                pod("gone-orphan", MATCH),
                pod("gone-owned", OTHER, "rs-uid"),
                pod("recreated", OTHER, "rs-uid"),
                pod("conflict", MATCH),
                pod("ok", MATCH),
            ]
        )
    assert str(info.value) == "conflict"
    assert len(server.patches) == 5


async def test_finalizers_and_extra_filter() -> None:
    server = FakeServer()
    finalizers = ["batch.kubernetes.io/job-tracking"]
    mgr = manager(server, finalizers=finalizers, extra_match=lambda p: "skip" not in p["metadata"])
    claimed = await mgr.claim_pods([pod("orphan", MATCH), pod("skipme", MATCH, skip=True)])
    assert [p["metadata"]["name"] for p in claimed] == ["orphan"]
    body = server.patches[0][2]
    assert body["metadata"]["finalizers"] == ["batch.kubernetes.io/job-tracking"]


def test_patch_bodies() -> None:
    assert adopt_patch(OWNER, "apps/v1", "ReplicaSet", "pod-uid") == {
        "metadata": {
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": "web",
                    "uid": "rs-uid",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            "uid": "pod-uid",
        }
    }
    assert release_patch("pod-uid", ["a", "b"], ["f"]) == {
        "metadata": {
            "uid": "pod-uid",
            "ownerReferences": [{"$patch": "delete", "uid": "a"}, {"$patch": "delete", "uid": "b"}],
            "$deleteFromPrimitiveList/finalizers": ["f"],
        }
    }
