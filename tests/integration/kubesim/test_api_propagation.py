"""DELETE propagation over real HTTP: the garbage-collector finalizers each policy leaves (kubesim only
marks; the manager's garbage collector cascades), the per-resource default (Job orphans and warns), repeated
deletes of an object already being deleted, and DELETECOLLECTION applying the policy to every item."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from kubesim import KubeSim
from kubesim.pytest_plugin import KubeSimFactory
from tests.helpers import run_kubectl, schemaless_crd
from tests.kubesim_api import Api

Obj = dict[str, Any]
CMS = "/api/v1/namespaces/default/configmaps"
EVENTS = "/api/v1/namespaces/default/events"
JOBS = "/apis/batch/v1/namespaces/default/jobs"
CRONJOBS = "/apis/batch/v1/namespaces/default/cronjobs"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
RSS = "/apis/apps/v1/namespaces/default/replicasets"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
GIZMOS = "/apis/example.com/v1/namespaces/default/gizmos"
JOB_WARNING = (
    '299 - "child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to '
    'remove them or set propagationPolicy=Orphan to suppress this warning"'
)
HOLD = "example.com/hold"


@pytest.fixture
async def sim(kubesim_factory: KubeSimFactory) -> KubeSim:
    return await kubesim_factory(kubelet=False)


def labelled(app: str) -> Obj:
    return {"matchLabels": {"app": app}}


def template(app: str, restart: str = "Always") -> Obj:
    spec = {"restartPolicy": restart, "containers": [{"name": "c", "image": "busybox"}]}
    return {"metadata": {"labels": {"app": app}}, "spec": spec}


def job(name: str, finalizers: list[str] | None = None) -> Obj:
    meta: Obj = {"name": name, "finalizers": finalizers} if finalizers else {"name": name}
    return {"metadata": meta, "spec": {"template": template(name, "Never")}}


def replicaset(name: str, finalizers: list[str] | None = None) -> Obj:
    meta: Obj = {"name": name, "finalizers": finalizers} if finalizers else {"name": name}
    return {"metadata": meta, "spec": {"selector": labelled(name), "template": template(name)}}


def gizmo_crd() -> Obj:
    return schemaless_crd("example.com", "Gizmo")


async def create_held(api: Api, path: str, name: str) -> Obj:
    """An object of each kind, held by a foreign finalizer so that it stays to be looked at."""
    bodies: dict[str, Obj] = {
        JOBS: job(name, [HOLD]),
        RSS: replicaset(name, [HOLD]),
        DEPLOYMENTS: {"metadata": {"name": name, "finalizers": [HOLD]}, "spec": replicaset(name)["spec"]},
        CRONJOBS: {
            "metadata": {"name": name, "finalizers": [HOLD]},
            "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": template(name, "Never")}}},
        },
        GIZMOS: {
            "apiVersion": "example.com/v1",
            "kind": "Gizmo",
            "metadata": {"name": name, "finalizers": [HOLD]},
        },
        CMS: {"metadata": {"name": name, "finalizers": [HOLD]}},
    }
    created: Obj = await api.ok("POST", path, bodies[path])
    return created


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("?propagationPolicy=Foreground", [HOLD, "foregroundDeletion"]),
        ("?propagationPolicy=Orphan", [HOLD, "orphan"]),
        ("?orphanDependents=true", [HOLD, "orphan"]),
        ("?propagationPolicy=Background", [HOLD]),
        ("?orphanDependents=false", [HOLD]),
        ("", [HOLD]),  # apps/v1 defaults to deleting dependents: no finalizer for it
    ],
)
async def test_each_policy_leaves_its_finalizer(api: Api, query: str, expected: list[str]) -> None:
    await create_held(api, RSS, "rs")
    status, deleting = await api.call("DELETE", f"{RSS}/rs{query}")
    assert status == (202 if query == "?orphanDependents=false" else 200)  # upstream's one 202 case
    assert deleting["metadata"]["finalizers"] == expected
    assert (
        deleting["metadata"]["deletionTimestamp"] and deleting["metadata"]["deletionGracePeriodSeconds"] == 0
    )


async def test_background_without_other_finalizers_deletes_at_once(api: Api) -> None:
    await api.ok("POST", RSS, replicaset("rs"))
    result = await api.ok("DELETE", f"{RSS}/rs", {"propagationPolicy": "Background"})
    assert result["kind"] == "Status" and result["status"] == "Success"
    assert await api.gone(f"{RSS}/rs")


@pytest.mark.parametrize("path", [DEPLOYMENTS, CRONJOBS, GIZMOS, CMS])
async def test_no_policy_adds_no_finalizer_except_for_jobs(api: Api, path: str) -> None:
    await api.ok("POST", CRDS, gizmo_crd())
    await create_held(api, path, "x")
    status, deleting, headers = await api.exchange("DELETE", f"{path}/x")
    assert status == 200 and deleting["metadata"]["finalizers"] == [HOLD]
    assert "Warning" not in headers


async def test_job_without_policy_orphans_and_warns(api: Api) -> None:
    await api.ok("POST", JOBS, job("j"))
    status, deleting, headers = await api.exchange("DELETE", f"{JOBS}/j")
    assert status == 200 and deleting["metadata"]["finalizers"] == ["orphan"]
    assert headers.getall("Warning") == [JOB_WARNING]
    await api.ok("POST", JOBS, job("k"))
    for options in ({"propagationPolicy": "Orphan"}, {"orphanDependents": True}):
        status, _, headers = await api.exchange("DELETE", f"{JOBS}/k", options)
        assert status == 200 and "Warning" not in headers  # naming a policy silences it
    status, _, headers = await api.exchange("DELETE", f"{JOBS}/missing")
    assert status == 404 and headers.getall("Warning") == [JOB_WARNING]  # added before the lookup
    status, result, headers = await api.exchange("DELETE", JOBS)  # deletecollection warns too
    assert status == 200 and headers.getall("Warning") == [JOB_WARNING]
    assert {i["metadata"]["name"] for i in result["items"]} == {"j", "k"}


async def test_events_take_no_gc_finalizer(api: Api) -> None:
    event = {"metadata": {"name": "e", "finalizers": [HOLD]}, "involvedObject": {"name": "p"}, "reason": "R"}
    await api.ok("POST", EVENTS, event)
    deleting = await api.ok("DELETE", f"{EVENTS}/e?propagationPolicy=Foreground")
    assert deleting["metadata"]["finalizers"] == [HOLD]


async def test_repeated_delete_switches_policy_and_keeps_the_timestamp(api: Api, sim: KubeSim) -> None:
    await create_held(api, RSS, "rs")
    first = (await api.ok("DELETE", f"{RSS}/rs?propagationPolicy=Foreground"))["metadata"]
    stamp, generation = first["deletionTimestamp"], first["generation"]
    orphaning = (await api.ok("DELETE", f"{RSS}/rs?propagationPolicy=Orphan"))["metadata"]
    assert orphaning["finalizers"] == [HOLD, "orphan"]
    rv = sim.store.resource_version
    unchanged = (await api.ok("DELETE", f"{RSS}/rs"))["metadata"]  # no policy: the earlier choice stands
    assert unchanged["finalizers"] == [HOLD, "orphan"] and sim.store.resource_version == rv
    back = (await api.ok("DELETE", f"{RSS}/rs", {"propagationPolicy": "Foreground"}))["metadata"]
    assert back["finalizers"] == [HOLD, "foregroundDeletion"]
    assert {m["deletionTimestamp"] for m in (orphaning, unchanged, back)} == {stamp}
    assert {m["generation"] for m in (orphaning, unchanged, back)} == {generation}  # bumped once


async def test_double_foreground_delete_readds_the_finalizer(api: Api) -> None:
    """Upstream TestDoubleDeletionWithFinalizer: a second Foreground DELETE after the finalizer was taken
    off (the garbage collector's last step) puts it back while the object is still held."""
    await create_held(api, CMS, "c")
    await api.ok("DELETE", f"{CMS}/c?propagationPolicy=Foreground")
    patch = {"metadata": {"finalizers": [HOLD]}}
    released = await api.ok("PATCH", f"{CMS}/c", patch, "application/merge-patch+json")
    assert released["metadata"]["finalizers"] == [HOLD]
    again = await api.ok("DELETE", f"{CMS}/c?propagationPolicy=Foreground")
    assert again["metadata"]["finalizers"] == [HOLD, "foregroundDeletion"]


async def test_background_delete_of_an_object_held_only_by_gc_removes_it(api: Api) -> None:
    await api.ok("POST", JOBS, job("j"))
    assert (await api.ok("DELETE", f"{JOBS}/j"))["metadata"]["finalizers"] == ["orphan"]
    result = await api.ok("DELETE", f"{JOBS}/j?propagationPolicy=Background")
    assert result["kind"] == "Status" and await api.gone(f"{JOBS}/j")


async def test_delete_collection_applies_the_policy_to_each_item(api: Api) -> None:
    for name in ("a", "b"):
        await create_held(api, RSS, name)

    async def finalizers() -> list[list[str]]:
        return [i["metadata"]["finalizers"] for i in (await api.ok("GET", RSS))["items"]]

    listed = await api.ok("DELETE", RSS, {"propagationPolicy": "Orphan"})
    assert [i["metadata"]["finalizers"] for i in listed["items"]] == [[HOLD]] * 2  # as listed, before
    assert not any(i["metadata"].get("deletionTimestamp") for i in listed["items"])
    assert await finalizers() == [[HOLD, "orphan"]] * 2
    await api.ok("DELETE", f"{RSS}?propagationPolicy=Foreground")
    assert await finalizers() == [[HOLD, "foregroundDeletion"]] * 2


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed on this machine")
async def test_kubectl_delete_sends_background_so_no_warning(api: Api, sim: KubeSim, tmp_path: Path) -> None:
    await api.ok("POST", JOBS, job("j"))
    await api.ok("POST", JOBS, job("o"))

    async def kubectl(*args: str) -> tuple[int, str]:
        """kubectl's exit code and everything it printed (warnings go to stderr as "Warning: ...")."""
        code, out, err = await run_kubectl(sim.kubeconfig, tmp_path / "cache", *args)
        return code, out + err

    code, output = await kubectl("delete", "job", "j", "--wait=false")
    assert code == 0 and "Warning" not in output, output
    assert await api.gone(f"{JOBS}/j")
    code, output = await kubectl("delete", "job", "o", "--cascade=orphan", "--wait=false")
    assert code == 0 and "Warning" not in output, output
    kept = await api.ok("GET", f"{JOBS}/o")  # held by the orphan finalizer, for the garbage collector
    assert kept["metadata"]["finalizers"] == ["orphan"]
