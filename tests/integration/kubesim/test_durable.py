"""kubesim with --data-dir, in process: a stopped and restarted server keeps every object (CRDs and custom
resources included) with its UID and resourceVersion, continues the counter, lets watches resume from the
saved history (410 below it), and its kubelet carries on with the pods it had."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from kubesim import KubeSim
from kubesim.storage.durable import DataDirError
from manager.cli.sandbox import Sandbox, SandboxUnavailable, apply_manifests
from manager.config.settings import Settings
from tests.helpers import schemaless_crd, wait_for
from tests.kubesim_api import Api

REPO = Path(__file__).resolve().parents[3]
CMS = "/api/v1/namespaces/default/configmaps"
PODS = "/api/v1/namespaces/default/pods"
WIDGETS = "/apis/example.com/v1/namespaces/default/widgets"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
CRD = schemaless_crd("example.com", "Widget")


def configmap(name: str, value: str = "v") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": value}}


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as client:
        yield client


async def watch_lines(session: aiohttp.ClientSession, url: str, count: int) -> list[dict[str, Any]]:
    """The first `count` events of a watch (or fewer if it ends first: timeoutSeconds bounds it)."""
    events: list[dict[str, Any]] = []
    async with session.get(url) as response:
        assert response.status == 200
        async for line in response.content:
            events.append(orjson.loads(line))
            if len(events) == count:
                break
    return events


async def test_a_restart_keeps_objects_uids_and_revisions(
    tmp_path: Path, session: aiohttp.ClientSession
) -> None:
    async with KubeSim(kubelet=False, data_dir=tmp_path) as sim:
        api = Api(session, sim.url)
        await api.ok("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", CRD)
        await wait_for(_served(api, WIDGETS), message="widgets served")
        widget = await api.ok(
            "POST", WIDGETS, {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
        )
        kept = await api.ok("POST", CMS, configmap("kept"))
        changed = await api.ok("PUT", f"{CMS}/kept", {**kept, "data": {"k": "changed"}})
        await api.ok("POST", CMS, configmap("gone"))
        await api.ok("DELETE", f"{CMS}/gone")
        lease = await api.ok(
            "POST",
            LEASES,
            {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"}},
        )
        last_rv = int((await api.ok("GET", CMS))["metadata"]["resourceVersion"])

    async with KubeSim(kubelet=False, data_dir=tmp_path) as sim:
        api = Api(session, sim.url)
        got = await api.ok("GET", f"{CMS}/kept")
        assert got["metadata"]["uid"] == kept["metadata"]["uid"]
        assert got["metadata"]["resourceVersion"] == changed["metadata"]["resourceVersion"]
        assert got["data"] == {"k": "changed"}
        assert await api.gone(f"{CMS}/gone")
        assert (await api.ok("GET", f"{LEASES}/l"))["metadata"]["uid"] == lease["metadata"]["uid"]
        restored = await api.ok("GET", f"{WIDGETS}/w")  # the CRD is served again without being re-created
        assert restored["metadata"]["uid"] == widget["metadata"]["uid"]
        fresh = await api.ok("POST", CMS, configmap("fresh"))
        assert int(fresh["metadata"]["resourceVersion"]) == last_rv + 1  # a clean stop: no gap
        namespaces = await api.ok("GET", "/api/v1/namespaces")
        assert sorted(n["metadata"]["name"] for n in namespaces["items"]).count("default") == 1


def _served(api: Api, path: str) -> Any:
    async def check() -> bool | None:
        status, _ = await api.call("GET", path)
        return status == 200 or None

    return check


async def test_a_watch_resumes_across_a_restart_and_older_revisions_get_410(
    tmp_path: Path, session: aiohttp.ClientSession
) -> None:
    async with KubeSim(kubelet=False, history_size=5, data_dir=tmp_path) as sim:
        api = Api(session, sim.url)
        first = await api.ok("POST", CMS, configmap("c0"))
        for i in range(1, 8):
            await api.ok("POST", CMS, configmap(f"c{i}"))
        listed = await api.ok("GET", CMS)
        resume_from = int(listed["metadata"]["resourceVersion"]) - 2  # two events back: still retained
    async with KubeSim(kubelet=False, history_size=5, data_dir=tmp_path) as sim:
        url = f"{sim.url}{CMS}?watch=1&timeoutSeconds=5&resourceVersion="
        events = await watch_lines(session, url + str(resume_from), 2)
        assert [e["type"] for e in events] == ["ADDED", "ADDED"]
        assert [e["object"]["metadata"]["name"] for e in events] == ["c6", "c7"]
        expired = await watch_lines(session, url + first["metadata"]["resourceVersion"], 1)
        assert expired[0]["type"] == "ERROR" and expired[0]["object"]["code"] == 410


async def test_the_kubelet_carries_on_with_restored_pods(
    tmp_path: Path, session: aiohttp.ClientSession
) -> None:
    def pod(name: str, run_seconds: str | None) -> dict[str, Any]:
        annotations = {} if run_seconds is None else {"kubesim.aiokcm.io/run-seconds": run_seconds}
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "annotations": annotations},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]},
        }

    async def phase(api: Api, name: str, wanted: str) -> dict[str, Any] | None:
        got = await api.ok("GET", f"{PODS}/{name}")
        return got if got.get("status", {}).get("phase") == wanted else None

    async with KubeSim(nodes=1, data_dir=tmp_path) as sim:
        api = Api(session, sim.url)
        await api.ok("POST", PODS, pod("done", "0"))
        await api.ok("POST", PODS, pod("long", None))
        done = await wait_for(lambda: phase(api, "done", "Succeeded"))
        running = await wait_for(lambda: phase(api, "long", "Running"))
        nodes = await api.ok("GET", "/api/v1/nodes")
    async with KubeSim(nodes=1, data_dir=tmp_path) as sim:
        api = Api(session, sim.url)
        assert (await api.ok("GET", "/api/v1/nodes"))["items"] == nodes["items"]  # same nodes, not re-made
        assert await api.ok("GET", f"{PODS}/done") == done
        await api.ok("POST", PODS, pod("new", None))
        new = await wait_for(lambda: phase(api, "new", "Running"))
        assert await api.ok("GET", f"{PODS}/long") == running  # still running, untouched
        assert new["status"]["podIP"] != running["status"]["podIP"]  # IPs continue after the restored ones


async def test_the_samples_apply_again_over_a_kept_cluster(tmp_path: Path) -> None:
    """`make run` twice: the second start finds the CRDs and samples there and applies them as kubectl would
    (unchanged), and a manifest changed in between is applied onto the kept object."""
    paths = [str(REPO / "config/crd"), str(REPO / "config/samples")]
    data_dir = tmp_path / "cluster"
    async with KubeSim(data_dir=data_dir) as sim:
        assert await apply_manifests(sim.url, paths) > 0
    changed = tmp_path / "changed.yaml"
    changed.write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: sample-settings}\ndata: {greeting: hello}\n"
    )
    async with KubeSim(data_dir=data_dir) as sim, aiohttp.ClientSession() as session:
        assert await apply_manifests(sim.url, paths) == 0  # all there already: nothing created, no error
        assert await apply_manifests(sim.url, [str(changed)]) == 1
        changed.write_text(changed.read_text().replace("hello", "bonjour"))
        assert await apply_manifests(sim.url, [str(changed)]) == 0
        got = await Api(session, sim.url).ok("GET", f"{CMS}/sample-settings")
        assert got["data"] == {"greeting": "bonjour"}


async def test_a_data_dir_serves_one_kubesim_at_a_time(tmp_path: Path) -> None:
    async with KubeSim(kubelet=False, data_dir=tmp_path):
        with pytest.raises(DataDirError, match="in use by another kubesim"):
            await KubeSim(kubelet=False, data_dir=tmp_path).start()
    async with KubeSim(kubelet=False, data_dir=tmp_path) as sim:  # free again once the first one stopped
        assert sim.journal is not None


async def test_fail_attempts_count_the_attempts_made_before_a_restart(
    tmp_path: Path, session: aiohttp.ClientSession
) -> None:
    """`fail-attempts: 1`: the owner's first pod fails, and its second succeeds although it runs on the
    restarted kubesim, which counted the first attempt from the stored pod."""
    owner = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": "j",
        "uid": "6f1c3d2e-5a4b-4c3d-9e8f-7a6b5c4d3e2f",
    }

    def attempt(name: str) -> dict[str, Any]:
        annotations = {"kubesim.aiokcm.io/run-seconds": "0", "kubesim.aiokcm.io/fail-attempts": "1"}
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "annotations": annotations, "ownerReferences": [owner]},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]},
        }

    async def finished(api: Api, name: str) -> str | None:
        phase = (await api.ok("GET", f"{PODS}/{name}")).get("status", {}).get("phase")
        return phase if phase in ("Succeeded", "Failed") else None

    async with KubeSim(nodes=1, data_dir=tmp_path) as sim:
        api = Api(session, sim.url)
        await api.ok("POST", PODS, attempt("first"))
        assert await wait_for(lambda: finished(api, "first")) == "Failed"
    async with KubeSim(nodes=1, data_dir=tmp_path) as sim:
        api = Api(session, sim.url)
        await api.ok("POST", PODS, attempt("second"))
        assert await wait_for(lambda: finished(api, "second")) == "Succeeded"


async def test_the_sandbox_keeps_its_cluster_in_sandbox_data_dir(
    tmp_path: Path, session: aiohttp.ClientSession
) -> None:
    settings = Settings(  # plain HTTP (tests/integration/rbac covers the RBAC sandbox over its data dir)
        sandbox=True, sandbox_data_dir=str(tmp_path / "cluster"), sandbox_authorization_mode="AlwaysAllow"
    )
    sandbox = await Sandbox.start(settings, kubeconfig=tmp_path / "kubeconfig")
    try:
        kept = await Api(session, sandbox.url).ok("POST", CMS, configmap("kept"))
    finally:
        await sandbox.stop()
    sandbox = await Sandbox.start(settings, kubeconfig=tmp_path / "kubeconfig")
    try:
        assert await Api(session, sandbox.url).ok("GET", f"{CMS}/kept") == kept
    finally:
        await sandbox.stop()
    (tmp_path / "cluster" / "kubesim.db").write_bytes(b"not a database" * 100)
    with pytest.raises(SandboxUnavailable, match=r"--sandbox-data-dir: .*not a kubesim data directory"):
        await Sandbox.start(settings, kubeconfig=tmp_path / "kubeconfig")
