"""The official `kubernetes` Python client (sync, run in a thread) against kubesim over real HTTP."""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

import pytest
from kubernetes import client, config, dynamic, watch
from kubernetes.client.exceptions import ApiException

from kubesim import KubeSim
from kubesim.pytest_plugin import KubeSimFactory

T = TypeVar("T")
NS = "default"


@pytest.fixture
async def sim(kubesim_factory: KubeSimFactory) -> KubeSim:
    return await kubesim_factory(kubelet=False)


@pytest.fixture
async def api_client(sim: KubeSim) -> Any:
    loaded = await asyncio.to_thread(config.new_client_from_config, config_file=sim.kubeconfig)
    yield loaded
    await asyncio.to_thread(loaded.close)


async def run(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    return await asyncio.to_thread(fn, *args, **kwargs)


class Object(Protocol):
    @property
    def metadata(self) -> client.V1ObjectMeta | None: ...


def meta(obj: Object) -> client.V1ObjectMeta:
    """The metadata every object read back from the server has (the models type it optional)."""
    assert obj.metadata is not None
    return obj.metadata


def name_of(obj: Object) -> str:
    found = meta(obj).name
    assert found is not None
    return found


def configmap(name: str, labels: dict[str, str] | None = None) -> client.V1ConfigMap:
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name, labels=labels), data={"k": "v"})


async def test_configmap_crud_and_conflict(api_client: Any) -> None:
    core = client.CoreV1Api(api_client)
    created = await run(core.create_namespaced_config_map, NS, configmap("c1", {"app": "a"}))
    assert meta(created).uid and meta(created).resource_version
    await run(core.create_namespaced_config_map, NS, configmap("c2", {"app": "b"}))
    listed = await run(core.list_namespaced_config_map, NS, label_selector="app in (a,b),!tier")
    assert sorted(name_of(i) for i in listed.items) == ["c1", "c2"]
    only_a = await run(core.list_namespaced_config_map, NS, label_selector="app=a")
    assert [name_of(i) for i in only_a.items] == ["c1"]
    patched = await run(core.patch_namespaced_config_map, "c1", NS, {"data": {"x": "y"}})
    assert patched.data == {"k": "v", "x": "y"}
    created.data = {"k": "stale"}
    with pytest.raises(ApiException) as err:
        await run(core.replace_namespaced_config_map, "c1", NS, created)
    assert err.value.status == 409
    with pytest.raises(ApiException) as err:
        await run(core.create_namespaced_config_map, NS, configmap("c1"))
    assert err.value.status == 409 and "AlreadyExists" in str(err.value.body)
    await run(
        core.delete_namespaced_config_map, "c1", NS, grace_period_seconds=0, propagation_policy="Foreground"
    )
    with pytest.raises(ApiException) as err:
        await run(core.read_namespaced_config_map, "c2-missing", NS)
    assert err.value.status == 404


async def test_bad_selector_is_400(api_client: Any) -> None:
    core = client.CoreV1Api(api_client)
    with pytest.raises(ApiException) as err:
        await run(core.list_namespaced_config_map, NS, label_selector="app in (")
    assert err.value.status == 400
    with pytest.raises(ApiException) as err:
        await run(core.list_namespaced_pod, NS, field_selector="spec.bogus=x")
    assert err.value.status == 400


async def test_watch_stream_with_resource_version(api_client: Any, sim: KubeSim) -> None:
    core = client.CoreV1Api(api_client)
    listed = await run(core.list_namespaced_config_map, NS)
    assert listed.metadata is not None
    start = listed.metadata.resource_version
    await run(core.create_namespaced_config_map, NS, configmap("w1"))
    await run(core.patch_namespaced_config_map, "w1", NS, {"data": {"k": "2"}})
    await run(core.delete_namespaced_config_map, "w1", NS)

    def collect() -> list[tuple[str, str]]:
        stream = watch.Watch().stream(
            core.list_namespaced_config_map,
            NS,
            resource_version=start,
            timeout_seconds=1,
            allow_watch_bookmarks=True,
        )
        return [(e["type"], e["object"].metadata.name) for e in stream if e["type"] != "BOOKMARK"]

    assert await run(collect) == [("ADDED", "w1"), ("MODIFIED", "w1"), ("DELETED", "w1")]


async def test_watch_of_compacted_history_raises_410(api_client: Any, sim: KubeSim) -> None:
    core = client.CoreV1Api(api_client)
    await run(core.create_namespaced_config_map, NS, configmap("old"))
    rv = sim.store.resource_version
    await run(core.create_namespaced_config_map, NS, configmap("new"))
    sim.store.compact()

    def resume() -> None:
        for _ in watch.Watch().stream(
            core.list_namespaced_config_map, NS, resource_version=str(rv - 1), timeout_seconds=1
        ):
            pass

    with pytest.raises(ApiException) as err:
        await run(resume)
    assert err.value.status == 410


async def test_deployment_scale_and_status(api_client: Any) -> None:
    apps = client.AppsV1Api(api_client)
    labels = {"app": "d"}
    deployment = client.V1Deployment(
        metadata=client.V1ObjectMeta(name="d"),
        spec=client.V1DeploymentSpec(
            replicas=1,
            selector=client.V1LabelSelector(match_labels=labels),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels=labels),
                spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="nginx")]),
            ),
        ),
    )
    created = await run(apps.create_namespaced_deployment, NS, deployment)
    assert meta(created).generation == 1
    scale = await run(apps.patch_namespaced_deployment_scale, "d", NS, {"spec": {"replicas": 3}})
    assert scale.spec is not None and scale.status is not None
    assert scale.spec.replicas == 3 and scale.status.selector == "app=d"
    current = await run(apps.read_namespaced_deployment, "d", NS)
    assert current.spec is not None
    assert current.spec.replicas == 3 and meta(current).generation == 2
    status = await run(apps.patch_namespaced_deployment_status, "d", NS, {"status": {"replicas": 3}})
    assert status.status is not None
    assert status.status.replicas == 3 and meta(status).generation == 2


async def test_lease_round_trip_with_micro_time(api_client: Any) -> None:
    coordination = client.CoordinationV1Api(api_client)
    now = datetime.datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=datetime.UTC)
    lease = client.V1Lease(
        metadata=client.V1ObjectMeta(name="leader"),
        spec=client.V1LeaseSpec(
            holder_identity="me", lease_duration_seconds=15, acquire_time=now, renew_time=now
        ),
    )
    created = await run(coordination.create_namespaced_lease, "kube-system", lease)
    assert created.spec is not None
    assert created.spec.renew_time == now


async def test_job_delete_orphans_by_default(api_client: Any) -> None:
    batch = client.BatchV1Api(api_client)
    job = client.V1Job(
        metadata=client.V1ObjectMeta(name="j"),
        spec=client.V1JobSpec(
            template=client.V1PodTemplateSpec(
                spec=client.V1PodSpec(
                    restart_policy="Never", containers=[client.V1Container(name="c", image="busybox")]
                )
            )
        ),
    )
    await run(batch.create_namespaced_job, NS, job)
    await run(batch.delete_namespaced_job, "j", NS)
    remaining = await run(batch.read_namespaced_job, "j", NS)
    assert meta(remaining).finalizers == ["orphan"] and meta(remaining).deletion_timestamp


async def test_events_v1(api_client: Any) -> None:
    events = client.EventsV1Api(api_client)
    event = client.EventsV1Event(
        metadata=client.V1ObjectMeta(name="e1"),
        event_time=datetime.datetime.now(datetime.UTC),
        reporting_controller="example.com/ctl",
        reporting_instance="ctl-1",
        action="Sync",
        reason="Synced",
        type="Normal",
        note="done",
        regarding=client.V1ObjectReference(kind="Pod", name="p", namespace=NS),
    )
    await run(events.create_namespaced_event, NS, event)
    core = client.CoreV1Api(api_client)
    viewed = await run(core.read_namespaced_event, "e1", NS)
    assert viewed.message == "done" and viewed.involved_object.name == "p"


async def test_dynamic_client_discovery(api_client: Any) -> None:
    def discover() -> list[str]:
        dyn = dynamic.DynamicClient(api_client)
        deployments = dyn.resources.get(api_version="apps/v1", kind="Deployment")
        leases = dyn.resources.get(api_version="coordination.k8s.io/v1", kind="Lease")
        pods = dyn.resources.get(api_version="v1", kind="Pod")
        return [deployments.name, leases.name, pods.name, str(pods.namespaced)]

    assert await run(discover) == ["deployments", "leases", "pods", "True"]
