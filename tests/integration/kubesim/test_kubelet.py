"""The simulated scheduler and kubelet, observed over real HTTP.

Most tests drive time with a `ManualClock` shared by kubesim's store and kubelet, so run-seconds, ready-after
and terminate-seconds are exact and cost no wall time; one test runs on the real clock end to end.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
import pytest

from kubesim.kubelet.clock import ManualClock
from kubesim.kubelet.pods import KILLED_EXIT_CODE, AttemptLedger, PodBehaviour
from kubesim.kubelet.scheduler import Scheduler, unfit_reason, unschedulable_message
from kubesim.pytest_plugin import KubeSimFactory
from tests.helpers import wait_for

Obj = dict[str, Any]
NS = "default"
PODS = f"/api/v1/namespaces/{NS}/pods"


class Api:
    """Just enough raw HTTP to talk to kubesim like any client would."""

    def __init__(self, session: aiohttp.ClientSession, url: str) -> None:
        self.session = session
        self.url = url

    async def call(self, method: str, path: str, body: Any = None, ctype: str = "application/json") -> Any:
        data = None if body is None else orjson.dumps(body)
        headers = {"Content-Type": ctype, "Accept": "application/json"}
        async with self.session.request(method, self.url + path, data=data, headers=headers) as resp:
            payload = orjson.loads(await resp.read())
            return resp.status, payload

    async def ok(self, method: str, path: str, body: Any = None, ctype: str = "application/json") -> Obj:
        status, payload = await self.call(method, path, body, ctype)
        assert status < 300, (method, path, status, payload)
        return dict(payload)

    async def pod(self, name: str) -> Obj | None:
        status, payload = await self.call("GET", f"{PODS}/{name}")
        if status == 404:
            return None
        assert status == 200, payload
        return dict(payload)

    async def existing_pod(self, name: str) -> Obj:
        pod = await self.pod(name)
        assert pod is not None, f"pod {name} not found"
        return pod


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as s:
        yield s


def pod_manifest(
    name: str,
    annotations: dict[str, str] | None = None,
    restart_policy: str = "Never",
    owner_uid: str | None = None,
    finalizers: list[str] | None = None,
) -> Obj:
    meta: Obj = {"name": name, "annotations": annotations or {}}
    if owner_uid:
        meta["ownerReferences"] = [
            {"apiVersion": "batch/v1", "kind": "Job", "name": "owner", "uid": owner_uid, "controller": True}
        ]
    if finalizers:
        meta["finalizers"] = finalizers
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"restartPolicy": restart_policy, "containers": [{"name": "main", "image": "busybox:1.36"}]},
    }


def condition(pod: Obj, kind: str) -> Obj | None:
    return next((c for c in pod.get("status", {}).get("conditions", []) if c["type"] == kind), None)


def present(pod: Obj, kind: str) -> Obj:
    """The condition `kind` of `pod`, which must have one."""
    found = condition(pod, kind)
    assert found is not None, f"no {kind} condition"
    return found


def main_container(pod: Obj) -> Obj:
    return dict(pod["status"]["containerStatuses"][0])


async def phase_is(api: Api, name: str, phase: str) -> Obj | None:
    pod = await api.pod(name)
    return pod if pod is not None and pod.get("status", {}).get("phase") == phase else None


async def wait_phase(api: Api, name: str, phase: str) -> Obj:
    return await wait_for(lambda: phase_is(api, name, phase), timeout=10, message=f"pod {name} {phase}")


@pytest.fixture
async def manual(kubesim_factory: KubeSimFactory, session: aiohttp.ClientSession) -> tuple[Api, ManualClock]:
    clock = ManualClock()
    sim = await kubesim_factory(clock=clock)
    return Api(session, sim.url), clock


async def test_nodes_are_registered_ready(kubesim: Any, session: aiohttp.ClientSession) -> None:
    api = Api(session, kubesim.url)
    nodes = (await api.ok("GET", "/api/v1/nodes"))["items"]
    assert [n["metadata"]["name"] for n in nodes] == [f"kubesim-node-{i}" for i in (1, 2, 3)]
    for node in nodes:
        status = node["status"]
        assert condition(node, "Ready") is not None
        assert present(node, "Ready")["status"] == "True"
        assert status["capacity"]["pods"] and status["allocatable"]["cpu"]
        assert {a["type"] for a in status["addresses"]} == {"InternalIP", "Hostname"}
        assert status["nodeInfo"]["kubeletVersion"].startswith("v1.")


async def test_pod_runs_and_succeeds_on_the_real_clock(kubesim: Any, session: aiohttp.ClientSession) -> None:
    api = Api(session, kubesim.url)
    await api.ok("POST", PODS, pod_manifest("real"))
    done = await wait_phase(api, "real", "Succeeded")
    assert done["spec"]["nodeName"].startswith("kubesim-node-")
    terminated = main_container(done)["state"]["terminated"]
    assert terminated["exitCode"] == 0 and terminated["reason"] == "Completed"
    assert present(done, "Ready")["status"] == "False"


async def test_running_pod_shape_then_success(manual: tuple[Api, ManualClock]) -> None:
    api, clock = manual
    await api.ok("POST", PODS, pod_manifest("p"))
    running = await wait_phase(api, "p", "Running")
    status = running["status"]
    assert status["podIP"] and status["hostIP"] and status["startTime"]
    main = main_container(running)
    assert main["ready"] is True and main["restartCount"] == 0
    assert main["containerID"].startswith("containerd://") and "@sha256:" in main["imageID"]
    assert "running" in main["state"]
    for kind in ("PodScheduled", "Initialized", "PodReadyToStartContainers", "ContainersReady", "Ready"):
        assert present(running, kind)["status"] == "True", kind
    clock.advance(0.4)
    assert (await api.existing_pod("p"))["status"]["phase"] == "Running"
    clock.advance(0.2)
    done = await wait_phase(api, "p", "Succeeded")
    terminated = main_container(done)["state"]["terminated"]
    assert terminated["exitCode"] == 0 and terminated["startedAt"] and terminated["finishedAt"]


async def test_exit_code_fails_the_pod(manual: tuple[Api, ManualClock]) -> None:
    api, clock = manual
    await api.ok("POST", PODS, pod_manifest("bad", {"kubesim.aiokcm.io/exit-code": "3"}))
    await wait_phase(api, "bad", "Running")
    clock.advance(0.5)
    failed = await wait_phase(api, "bad", "Failed")
    terminated = main_container(failed)["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (3, "Error")


async def test_run_seconds_and_ready_after(manual: tuple[Api, ManualClock]) -> None:
    api, clock = manual
    annotations = {"kubesim.aiokcm.io/run-seconds": "10", "kubesim.aiokcm.io/ready-after-seconds": "2"}
    await api.ok("POST", PODS, pod_manifest("slow", annotations))
    running = await wait_phase(api, "slow", "Running")
    assert present(running, "Ready")["status"] == "False"
    clock.advance(2)
    await wait_for(lambda: _ready(api, "slow"), timeout=10, message="Ready after ready-after-seconds")
    clock.advance(7)
    assert (await api.existing_pod("slow"))["status"]["phase"] == "Running"
    clock.advance(1)
    await wait_phase(api, "slow", "Succeeded")


async def _ready(api: Api, name: str) -> bool:
    pod = await api.pod(name)
    cond = condition(pod, "Ready") if pod else None
    return cond is not None and cond["status"] == "True"


async def test_exit_codes_by_index(manual: tuple[Api, ManualClock]) -> None:
    api, clock = manual
    for index in (1, 2):
        annotations = {
            "kubesim.aiokcm.io/exit-codes-by-index": "1:42,3:7",
            "batch.kubernetes.io/job-completion-index": str(index),
        }
        await api.ok("POST", PODS, pod_manifest(f"idx-{index}", annotations))
        await wait_phase(api, f"idx-{index}", "Running")
    clock.advance(0.5)
    failed = await wait_phase(api, "idx-1", "Failed")
    assert main_container(failed)["state"]["terminated"]["exitCode"] == 42
    await wait_phase(api, "idx-2", "Succeeded")


async def test_fail_attempts_count_per_owner(manual: tuple[Api, ManualClock]) -> None:
    api, clock = manual
    annotations = {"kubesim.aiokcm.io/fail-attempts": "2"}
    phases = []
    for attempt in range(3):
        name = f"try-{attempt}"
        await api.ok("POST", PODS, pod_manifest(name, annotations, owner_uid="owner-uid-1"))
        await wait_phase(api, name, "Running")
        clock.advance(0.5)
        pod = await wait_for(
            functools.partial(_terminal, api, name),
            timeout=10,
            message=f"{name} terminal",
        )
        phases.append((pod["status"]["phase"], main_container(pod)["state"]["terminated"]["exitCode"]))
    assert phases == [("Failed", 1), ("Failed", 1), ("Succeeded", 0)]
    # another owner has its own count
    await api.ok("POST", PODS, pod_manifest("other", annotations, owner_uid="owner-uid-2"))
    await wait_phase(api, "other", "Running")
    clock.advance(0.5)
    await wait_phase(api, "other", "Failed")


async def _terminal(api: Api, name: str) -> Obj | None:
    pod = await api.pod(name)
    return pod if pod and pod.get("status", {}).get("phase") in ("Succeeded", "Failed") else None


async def test_on_failure_restarts_count_as_attempts(manual: tuple[Api, ManualClock]) -> None:
    api, clock = manual
    annotations = {"kubesim.aiokcm.io/fail-attempts": "2", "kubesim.aiokcm.io/exit-code": "5"}
    await api.ok("POST", PODS, pod_manifest("retry", annotations, restart_policy="OnFailure"))
    await wait_phase(api, "retry", "Running")
    for restarts in (1, 2):
        clock.advance(0.5)
        pod = await wait_for(
            functools.partial(_restarts, api, "retry", restarts),
            timeout=10,
            message=f"restart {restarts}",
        )
        main = main_container(pod)
        assert pod["status"]["phase"] == "Running"
        assert main["lastState"]["terminated"]["exitCode"] == 5
        assert "running" in main["state"]
    clock.advance(0.5)
    done = await wait_phase(api, "retry", "Succeeded")
    assert main_container(done)["restartCount"] == 2


async def _restarts(api: Api, name: str, count: int) -> Obj | None:
    pod = await api.pod(name)
    statuses = (pod or {}).get("status", {}).get("containerStatuses") or [{}]
    return pod if statuses[0].get("restartCount") == count else None


async def test_restart_policy_always_restarts_on_exit(manual: tuple[Api, ManualClock]) -> None:
    api, clock = manual
    annotations = {"kubesim.aiokcm.io/run-seconds": "1"}
    await api.ok("POST", PODS, pod_manifest("svc", annotations, restart_policy="Always"))
    await wait_phase(api, "svc", "Running")
    clock.advance(1)
    pod = await wait_for(lambda: _restarts(api, "svc", 1), timeout=10, message="first restart")
    assert main_container(pod)["lastState"]["terminated"]["reason"] == "Completed"
    clock.advance(1)
    pod = await wait_for(lambda: _restarts(api, "svc", 2), timeout=10, message="second restart")
    assert pod["status"]["phase"] == "Running"


async def test_restart_policy_always_runs_forever_by_default(manual: tuple[Api, ManualClock]) -> None:
    api, clock = manual
    await api.ok("POST", PODS, pod_manifest("forever", restart_policy="Always"))
    before = await wait_phase(api, "forever", "Running")
    clock.advance(3600)
    after = await api.pod("forever")
    assert after is not None and after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


async def test_unschedulable_pod_stays_pending(manual: tuple[Api, ManualClock]) -> None:
    api, clock = manual
    await api.ok("POST", PODS, pod_manifest("stuck", {"kubesim.aiokcm.io/unschedulable": "true"}))
    pod = await wait_for(lambda: _unschedulable(api, "stuck"), timeout=10, message="Unschedulable condition")
    assert pod["status"]["phase"] == "Pending" and not pod["spec"].get("nodeName")
    clock.advance(60)
    again = await api.pod("stuck")
    assert again is not None and again["metadata"]["resourceVersion"] == pod["metadata"]["resourceVersion"]


async def _unschedulable(api: Api, name: str) -> Obj | None:
    pod = await api.pod(name)
    cond = condition(pod, "PodScheduled") if pod else None
    ok = cond is not None and cond["status"] == "False" and cond.get("reason") == "Unschedulable"
    return pod if ok else None


async def test_scheduler_spreads_pods_over_nodes(manual: tuple[Api, ManualClock]) -> None:
    api, _ = manual
    for i in range(6):
        await api.ok("POST", PODS, pod_manifest(f"spread-{i}", restart_policy="Always"))
    for i in range(6):
        await wait_phase(api, f"spread-{i}", "Running")
    pods = (await api.ok("GET", PODS))["items"]
    per_node: dict[str, int] = {}
    for pod in pods:
        per_node[pod["spec"]["nodeName"]] = per_node.get(pod["spec"]["nodeName"], 0) + 1
    assert sorted(per_node.values()) == [2, 2, 2]


async def test_node_selector_waits_for_a_matching_node(manual: tuple[Api, ManualClock]) -> None:
    api, _ = manual
    manifest = pod_manifest("picky", restart_policy="Always")
    manifest["spec"]["nodeSelector"] = {"disk": "ssd"}
    await api.ok("POST", PODS, manifest)
    pod = await wait_for(lambda: _unschedulable(api, "picky"), timeout=10, message="Unschedulable condition")
    message = present(pod, "PodScheduled")["message"]
    assert message == "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."
    label = {"metadata": {"labels": {"disk": "ssd"}}}
    await api.ok("PATCH", "/api/v1/nodes/kubesim-node-2", label, "application/merge-patch+json")
    running = await wait_phase(api, "picky", "Running")
    assert running["spec"]["nodeName"] == "kubesim-node-2"
    assert present(running, "PodScheduled")["status"] == "True"


async def test_cordoned_nodes_get_no_pods(manual: tuple[Api, ManualClock]) -> None:
    api, _ = manual
    for name in ("kubesim-node-1", "kubesim-node-3"):
        cordon = {"spec": {"unschedulable": True}}
        await api.ok("PATCH", f"/api/v1/nodes/{name}", cordon, "application/merge-patch+json")
    for i in range(3):
        await api.ok("POST", PODS, pod_manifest(f"cordon-{i}", restart_policy="Always"))
    for i in range(3):
        assert (await wait_phase(api, f"cordon-{i}", "Running"))["spec"]["nodeName"] == "kubesim-node-2"


async def test_active_deadline_fails_the_pod(manual: tuple[Api, ManualClock]) -> None:
    api, clock = manual
    manifest = pod_manifest("deadline", restart_policy="Always")
    manifest["spec"]["activeDeadlineSeconds"] = 5
    await api.ok("POST", PODS, manifest)
    await wait_phase(api, "deadline", "Running")
    clock.advance(5)
    failed = await wait_phase(api, "deadline", "Failed")
    assert failed["status"]["reason"] == "DeadlineExceeded"
    assert main_container(failed)["state"]["terminated"]["exitCode"] == KILLED_EXIT_CODE


async def test_other_schedulers_pods_are_left_alone(manual: tuple[Api, ManualClock]) -> None:
    api, _ = manual
    manifest = pod_manifest("custom")
    manifest["spec"]["schedulerName"] = "my-scheduler"
    created = await api.ok("POST", PODS, manifest)
    await api.ok("POST", PODS, pod_manifest("marker"))
    await wait_phase(api, "marker", "Running")  # created after "custom": the kubelet has seen both
    pod = await api.pod("custom")
    assert pod is not None and pod["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


async def test_init_containers_complete_before_the_pod_runs(manual: tuple[Api, ManualClock]) -> None:
    api, _ = manual
    manifest = pod_manifest("init")
    manifest["spec"]["initContainers"] = [{"name": "setup", "image": "busybox:1.36"}]
    manifest["spec"]["containers"].append({"name": "sidecar", "image": "nginx:1"})
    await api.ok("POST", PODS, manifest)
    running = await wait_phase(api, "init", "Running")
    init = running["status"]["initContainerStatuses"][0]
    assert init["name"] == "setup" and init["state"]["terminated"]["reason"] == "Completed"
    assert [c["name"] for c in running["status"]["containerStatuses"]] == ["main", "sidecar"]


async def test_hundreds_of_pods_finish_together(manual: tuple[Api, ManualClock]) -> None:
    api, clock = manual
    count = 200
    await asyncio.gather(*(api.ok("POST", PODS, pod_manifest(f"many-{i}")) for i in range(count)))

    async def phases() -> dict[str, int]:
        tally: dict[str, int] = {}
        for pod in (await api.ok("GET", PODS))["items"]:
            phase = pod.get("status", {}).get("phase")
            tally[phase] = tally.get(phase, 0) + 1
        return tally

    await wait_for(lambda: _all_in(phases, "Running", count), timeout=20, message="all Running")
    clock.advance(0.5)
    await wait_for(lambda: _all_in(phases, "Succeeded", count), timeout=20, message="all Succeeded")


async def _all_in(phases: Any, phase: str, count: int) -> bool:
    return bool((await phases()).get(phase) == count)


async def test_deleted_pod_terminates_then_is_removed(manual: tuple[Api, ManualClock]) -> None:
    api, clock = manual
    await api.ok("POST", PODS, pod_manifest("gone", restart_policy="Always"))
    await wait_phase(api, "gone", "Running")
    await api.ok("DELETE", f"{PODS}/gone")
    terminating = await api.pod("gone")
    assert terminating is not None and terminating["metadata"].get("deletionTimestamp")
    clock.advance(0.2)
    await wait_for(lambda: _absent(api, "gone"), timeout=10, message="pod removed")


async def _absent(api: Api, name: str) -> bool:
    return await api.pod(name) is None


async def test_deletion_honours_finalizers(manual: tuple[Api, ManualClock]) -> None:
    api, clock = manual
    manifest = pod_manifest(
        "held", {"kubesim.aiokcm.io/terminate-seconds": "1"}, "Always", None, ["test/hold"]
    )
    await api.ok("POST", PODS, manifest)
    await wait_phase(api, "held", "Running")
    await api.ok("DELETE", f"{PODS}/held")
    clock.advance(1)
    killed = await wait_phase(api, "held", "Failed")
    assert main_container(killed)["state"]["terminated"]["exitCode"] == KILLED_EXIT_CODE
    assert killed["metadata"]["deletionTimestamp"]
    patch = {"metadata": {"finalizers": None}}
    await api.ok("PATCH", f"{PODS}/held", patch, "application/merge-patch+json")
    await wait_for(lambda: _absent(api, "held"), timeout=10, message="pod removed once finalizers are gone")


async def test_status_writes_are_api_writes(kubesim: Any, session: aiohttp.ClientSession) -> None:
    api = Api(session, kubesim.url)
    start_rv = (await api.ok("GET", PODS))["metadata"]["resourceVersion"]
    await api.ok("POST", PODS, pod_manifest("watched"))
    seen: list[tuple[str, str | None, int]] = []
    url = f"{kubesim.url}{PODS}?watch=true&resourceVersion={start_rv}"
    async with session.get(url, timeout=aiohttp.ClientTimeout(total=15)) as resp:
        async for line in resp.content:
            event = orjson.loads(line)
            obj = event["object"]
            seen.append(
                (event["type"], obj.get("status", {}).get("phase"), int(obj["metadata"]["resourceVersion"]))
            )
            if obj.get("status", {}).get("phase") == "Succeeded":
                break
    assert seen[0][0] == "ADDED"
    assert [p for _, p, _ in seen][-2:] == ["Running", "Succeeded"]
    rvs = [rv for _, _, rv in seen]
    assert rvs == sorted(set(rvs))


async def test_no_kubelet_leaves_pods_alone(
    kubesim_factory: KubeSimFactory, session: aiohttp.ClientSession
) -> None:
    sim = await kubesim_factory(kubelet=False)
    api = Api(session, sim.url)
    assert (await api.ok("GET", "/api/v1/nodes"))["items"] == []
    created = await api.ok("POST", PODS, pod_manifest("idle"))
    rv = created["metadata"]["resourceVersion"]
    # A kubelet would bind the pod within milliseconds: a one-second watch must stay silent.
    url = f"{sim.url}{PODS}?watch=true&resourceVersion={rv}&timeoutSeconds=1"
    async with session.get(url, timeout=aiohttp.ClientTimeout(total=10)) as resp:
        assert resp.status == 200
        lines = [line async for line in resp.content if line.strip()]
    assert lines == []
    pod = await api.pod("idle")
    assert pod is not None and not pod["spec"].get("nodeName")


# -- pure logic: annotations, attempts, scheduler, clock (no server) ---------------------------------------


def test_behaviour_defaults_follow_restart_policy() -> None:
    never = PodBehaviour.of(pod_manifest("a"))
    always = PodBehaviour.of(pod_manifest("b", restart_policy="Always"))
    assert (never.run_seconds, never.exit_code, never.terminate_seconds) == (0.5, 0, 0.2)
    assert always.run_seconds is None and always.ready_after_seconds == 0
    odd = PodBehaviour.of(pod_manifest("c", {"kubesim.aiokcm.io/run-seconds": "soon"}))
    assert odd.run_seconds == 0.5  # unparsable values fall back to the default


def test_exit_code_per_attempt_and_index() -> None:
    annotations = {
        "kubesim.aiokcm.io/exit-codes-by-index": "1:42, 3:7,bad",
        "kubesim.aiokcm.io/fail-attempts": "1",
        "batch.kubernetes.io/job-completion-index": "3",
    }
    behaviour = PodBehaviour.of(pod_manifest("x", annotations, owner_uid="u1"))
    assert behaviour.attempt_key == ("u1", 3)
    assert [behaviour.exit_code_for_attempt(n) for n in range(3)] == [7, 0, 0]
    plain = PodBehaviour.of(pod_manifest("y", {"kubesim.aiokcm.io/fail-attempts": "2"}))
    assert [plain.exit_code_for_attempt(n) for n in range(3)] == [1, 1, 0]
    ledger = AttemptLedger()
    assert [ledger.next_attempt(("u1", 3)) for _ in range(2)] == [0, 1]
    assert ledger.next_attempt(("u1", 4)) == 0


def test_scheduler_least_loaded_with_round_robin_ties() -> None:
    scheduler = Scheduler(["n1", "n2", "n3"])
    picks = []
    for uid in "abcd":
        node = scheduler.pick()
        assert node is not None
        scheduler.place(uid, node)
        picks.append(node)
    assert picks == ["n1", "n2", "n3", "n1"]
    scheduler.release("b")
    assert scheduler.pick() == "n2"
    assert Scheduler([]).pick() is None


def test_node_fit_rules() -> None:
    node = {
        "metadata": {"name": "n1", "labels": {"zone": "a", "cores": "8"}},
        "spec": {"taints": [{"key": "gpu", "value": "yes", "effect": "NoSchedule"}]},
    }
    plain = pod_manifest("p")
    assert unfit_reason(plain, node) == "node(s) had untolerated taint(s)"
    plain["spec"]["tolerations"] = [{"key": "gpu", "operator": "Exists"}]
    assert unfit_reason(plain, node) is None
    terms = [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]},
        {"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["4"]}]},
    ]
    plain["spec"]["affinity"] = {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}
    }
    assert unfit_reason(plain, node) is None  # the second term matches
    terms.pop()
    assert unfit_reason(plain, node) == "node(s) didn't match Pod's node affinity/selector"
    assert unschedulable_message(3, ["b", "a", "b"]) == "0/3 nodes are available: 1 a, 2 b."


def test_manual_clock_fires_timers_in_deadline_order() -> None:
    clock = ManualClock()
    fired: list[str] = []
    clock.call_later(2, lambda: fired.append("late"))
    clock.call_later(1, lambda: fired.append("early"))
    cancelled = clock.call_later(1.5, lambda: fired.append("cancelled"))
    cancelled.cancel()

    def chain() -> None:
        clock.call_later(0.2, lambda: fired.append("chained"))

    clock.call_later(0.5, chain)
    start = clock()
    clock.advance(1)
    assert fired == ["chained", "early"]
    clock.advance(1)
    assert fired == ["chained", "early", "late"] and clock() == start + 2 and clock.pending == 0


async def test_official_client_reads_simulated_nodes_and_pods(
    kubesim: Any, session: aiohttp.ClientSession
) -> None:
    """The kubelet's objects deserialise into the official client's models (required fields all present)."""
    from kubernetes import client

    api = Api(session, kubesim.url)
    await api.ok("POST", PODS, pod_manifest("typed"))
    await wait_phase(api, "typed", "Succeeded")

    def read() -> tuple[Any, Any]:
        config = client.Configuration(host=kubesim.url)
        with client.ApiClient(config) as api_client:
            core = client.CoreV1Api(api_client)
            return core.list_node(), core.read_namespaced_pod("typed", NS)

    nodes, pod = await asyncio.to_thread(read)
    assert [n.status.node_info.kubelet_version for n in nodes.items] == ["v1.32.0"] * 3
    assert nodes.items[0].status.conditions[-1].type == "Ready"
    assert pod.status.phase == "Succeeded"
    terminated = pod.status.container_statuses[0].state.terminated
    assert terminated.exit_code == 0 and terminated.reason == "Completed"
    assert pod.status.pod_ip and pod.status.start_time is not None
