"""A typed custom resource end to end against kubesim over HTTP: the CRD generated from the model, schema
rejections (422 with the field path), model rejections (Invalid condition + Warning event, no retry storm),
and a controller written with the typed API and the toolkit (owned ConfigMap, Ready condition by status
patch, a finalizer removed on delete)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic import BaseModel, Field, field_validator

from kubesim import KubeSim
from manager import (
    CONFIGMAPS,
    CUSTOMRESOURCEDEFINITIONS,
    EVENTS,
    AlreadyExists,
    ApiClient,
    Conflict,
    Controller,
    CustomResource,
    For,
    Invalid,
    InvalidObject,
    NotFound,
    Owns,
    PrinterColumn,
    Request,
    add_finalizer,
    custom_resource_definition,
    find_status_condition,
    patch_finalizers,
    patch_status,
    remove_finalizer,
    resolve_resource,
    set_controller_reference,
    set_status_condition,
)
from manager.client.rest import create_client
from manager.testing import controller_of, run_manager, wait_for

NS = "default"
FINALIZER = "demo.example.com/cleanup"


class GreetingSpec(BaseModel):
    message: str = Field(min_length=1, description="What the ConfigMap says.")
    replicas: int = Field(1, ge=0, le=5)

    @field_validator("message")
    @classmethod
    def _capitalised(cls, value: str) -> str:  # a rule the CRD schema cannot express
        if not value[:1].isupper():
            raise ValueError("must start with a capital letter")
        return value


class GreetingStatus(BaseModel):
    conditions: list[dict[str, Any]] = []
    observedGeneration: int | None = None


class Greeting(CustomResource):
    """A greeting kept in a ConfigMap."""

    group = "demo.example.com"
    version = "v1"
    kind = "Greeting"
    short_names = ("gr",)
    printer_columns = (PrinterColumn("Message", "string", ".spec.message"),)
    spec: GreetingSpec
    status: GreetingStatus | None = None


GREETINGS = Greeting.gvr()
deleted_externally: list[str] = []


class GreetingController(Controller):
    name = "greeting-controller"
    watches = (For(GREETINGS), Owns(CONFIGMAPS))

    async def reconcile(self, request: Request) -> None:
        try:
            greeting = await self.get_typed(Greeting, request)
        except InvalidObject as invalid:  # an invalid object being deleted still lets go of its finalizer
            edited = {"metadata": dict(invalid.object["metadata"])}
            if edited["metadata"].get("deletionTimestamp") and remove_finalizer(edited, FINALIZER):
                await patch_finalizers(self.client, GREETINGS, edited)
                deleted_externally.append(edited["metadata"]["name"])
                return
            raise
        if greeting is None:
            return
        obj = greeting.raw
        if greeting.metadata.deletion_timestamp:
            edited = {"metadata": dict(obj["metadata"])}
            if remove_finalizer(edited, FINALIZER):
                await patch_finalizers(self.client, GREETINGS, edited)
                deleted_externally.append(greeting.metadata.name)  # the "external cleanup", done
            return
        edited = {"metadata": dict(obj["metadata"])}
        if add_finalizer(edited, FINALIZER):
            await patch_finalizers(self.client, GREETINGS, edited)
            return  # the update brings us back
        cm: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": greeting.metadata.name, "namespace": greeting.metadata.namespace},
            "data": {"message": greeting.spec.message},
        }
        set_controller_reference(obj, cm)
        if self.lister(CONFIGMAPS).get_by_key(request.key) is None:
            with contextlib.suppress(AlreadyExists):
                await self.client.create(CONFIGMAPS, cm)
        conditions = [dict(c) for c in (greeting.status.conditions if greeting.status else [])]
        changed = set_status_condition(
            conditions,
            {
                "type": "Ready",
                "status": "True",
                "reason": "ConfigMapCreated",
                "message": f"ConfigMap {greeting.metadata.name} holds the message",
                "observedGeneration": greeting.metadata.generation,
            },
            now=time.time(),
        )
        if changed:
            await patch_status(
                self.client,
                GREETINGS,
                obj,
                {"conditions": conditions, "observedGeneration": greeting.metadata.generation},
                resource_version=greeting.metadata.resource_version,
            )


def greeting(name: str, message: Any, replicas: Any = 1) -> dict[str, Any]:
    return {
        "apiVersion": "demo.example.com/v1",
        "kind": "Greeting",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"message": message, "replicas": replicas},
    }


@pytest.fixture
async def client(kubesim: KubeSim) -> AsyncIterator[ApiClient]:
    api = await create_client(master=kubesim.url)
    await api.create(CUSTOMRESOURCEDEFINITIONS, custom_resource_definition(Greeting))

    async def served() -> bool:
        try:
            return await resolve_resource(api, "demo.example.com", "v1", "Greeting") == GREETINGS
        except LookupError:
            return False

    await wait_for(served, 10, message="greetings served")
    try:
        yield api
    finally:
        await api.close()


async def test_the_generated_crd_is_served_with_its_names_and_printer_columns(client: ApiClient) -> None:
    crd = await client.get(CUSTOMRESOURCEDEFINITIONS, "greetings.demo.example.com")
    assert crd["spec"]["names"]["shortNames"] == ["gr"]
    version = crd["spec"]["versions"][0]
    assert version["subresources"] == {"status": {}}
    assert version["additionalPrinterColumns"][0]["jsonPath"] == ".spec.message"


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"message": "Hi", "replicas": 9}, "spec.replicas"),
        ({"message": "", "replicas": 1}, "spec.message"),
        ({"message": 3, "replicas": 1}, "spec.message"),
        ({"replicas": 1}, "spec.message"),
    ],
)
async def test_schema_invalid_objects_are_422_with_the_field_path(
    client: ApiClient, spec: dict[str, Any], field: str
) -> None:
    body = greeting("bad", "x")
    body["spec"] = spec
    with pytest.raises(Invalid) as caught:
        await client.create(GREETINGS, body)
    assert caught.value.status == 422
    assert field in str(caught.value)


async def test_a_typed_controller_with_the_toolkit(kubesim: KubeSim, client: ApiClient) -> None:
    deleted_externally.clear()
    async with run_manager(kubesim.url, GreetingController) as manager:
        await client.create(GREETINGS, greeting("hello", "Hello"))

        async def ready() -> dict[str, Any] | None:
            obj = await client.get(GREETINGS, "hello", NS)
            condition = find_status_condition((obj.get("status") or {}).get("conditions"), "Ready")
            return obj if condition and condition["status"] == "True" else None

        obj = await wait_for(ready, 10, message="the Ready condition")
        assert obj["metadata"]["finalizers"] == [FINALIZER]
        assert obj["status"]["observedGeneration"] == obj["metadata"]["generation"]
        cm = await client.get(CONFIGMAPS, "hello", NS)
        assert cm["data"] == {"message": "Hello"}
        [ref] = cm["metadata"]["ownerReferences"]
        assert ref == {
            "apiVersion": "demo.example.com/v1",
            "kind": "Greeting",
            "name": "hello",
            "uid": obj["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }

        # Reads of an unchanged object are not validated again.
        controller = controller_of(manager, GreetingController)
        typed = controller.typed_lister(Greeting)
        first = typed.get(NS, "hello")
        before = typed.validations
        assert typed.get(NS, "hello") is first
        assert typed.list() == [first]
        assert typed.validations == before

        await client.delete(GREETINGS, "hello", NS)

        async def gone() -> bool:
            try:
                await client.get(GREETINGS, "hello", NS)
            except NotFound:
                return True
            return False

        await wait_for(gone, 10, message="the greeting deleted once its finalizer is removed")
        assert deleted_externally == ["hello"]


async def test_a_model_invalid_object_gets_a_condition_and_an_event_not_a_retry_storm(
    kubesim: KubeSim, client: ApiClient
) -> None:
    async with run_manager(kubesim.url, GreetingController) as manager:
        await client.create(GREETINGS, greeting("shy", "hello"))  # the schema accepts, the model does not

        async def invalid() -> dict[str, Any] | None:
            obj = await client.get(GREETINGS, "shy", NS)
            return find_status_condition((obj.get("status") or {}).get("conditions"), "Invalid")

        condition = await wait_for(invalid, 10, message="the Invalid condition")
        assert condition["status"] == "True"
        assert condition["reason"] == "InvalidSpec"
        assert condition["message"].startswith("spec.message: ")
        assert "capital letter" in condition["message"]

        async def warning() -> list[dict[str, Any]]:
            events = (await client.list(EVENTS, NS))["items"]
            return [
                e for e in events if e["reason"] == "InvalidSpec" and e["involvedObject"]["name"] == "shy"
            ]

        [event] = await wait_for(warning, 10, message="the Warning event")
        assert event["type"] == "Warning"
        assert "spec.message" in event["message"]

        controller = controller_of(manager, GreetingController)
        with pytest.raises(NotFound):
            await client.get(CONFIGMAPS, "shy", NS)
        assert controller.queue.num_requeues(Request(NS, "shy")) == 0  # terminal: not retried

        # Fixed: the condition goes and the controller does its work.
        obj = await client.get(GREETINGS, "shy", NS)
        obj["spec"]["message"] = "Hello"
        await client.update(GREETINGS, obj)

        async def recovered() -> bool:
            current = await client.get(GREETINGS, "shy", NS)
            conditions = (current.get("status") or {}).get("conditions")
            return find_status_condition(conditions, "Invalid") is None and bool(
                find_status_condition(conditions, "Ready")
            )

        await wait_for(recovered, 10, message="the Invalid condition cleared and Ready set")
        # Every reconcile of the invalid versions found the condition already there: one event, sent once.
        [event] = await warning()
        assert event.get("count", 1) == 1
        assert controller.queue.num_requeues(Request(NS, "shy")) == 0


async def test_status_and_finalizer_patches_honour_the_resource_version_precondition(
    client: ApiClient,
) -> None:

    created = await client.create(GREETINGS, greeting("rv", "Hi"))
    conditions: list[dict[str, Any]] = []
    set_status_condition(conditions, {"type": "Ready", "status": "False", "reason": "Waiting"}, time.time())
    patched = await patch_status(
        client,
        GREETINGS,
        created,
        {"conditions": conditions},
        resource_version=created["metadata"]["resourceVersion"],
    )
    assert patched["status"]["conditions"][0]["reason"] == "Waiting"
    assert patched["spec"] == created["spec"]  # the status subresource leaves spec alone
    with pytest.raises(Conflict):  # `created` is now stale
        await patch_status(
            client,
            GREETINGS,
            created,
            {"conditions": []},
            resource_version=created["metadata"]["resourceVersion"],
        )

    stale = {"metadata": dict(created["metadata"])}
    assert add_finalizer(stale, FINALIZER)
    with pytest.raises(Conflict):
        await patch_finalizers(client, GREETINGS, stale)
    fresh = await client.get(GREETINGS, "rv", NS)
    assert add_finalizer(fresh, FINALIZER)
    updated = await patch_finalizers(client, GREETINGS, fresh)
    assert updated["metadata"]["finalizers"] == [FINALIZER]
    assert remove_finalizer(updated, FINALIZER)
    cleared = await patch_finalizers(client, GREETINGS, updated)
    assert not cleared["metadata"].get("finalizers")


async def test_an_object_made_invalid_then_deleted_still_loses_its_finalizer(
    kubesim: KubeSim, client: ApiClient
) -> None:
    deleted_externally.clear()
    async with run_manager(kubesim.url, GreetingController):
        await client.create(GREETINGS, greeting("turncoat", "Hello"))

        async def finalized() -> dict[str, Any] | None:
            obj = await client.get(GREETINGS, "turncoat", NS)
            return obj if obj["metadata"].get("finalizers") == [FINALIZER] else None

        obj = await wait_for(finalized, 10, message="the finalizer")
        obj["spec"]["message"] = "lowercase now"
        await client.update(GREETINGS, obj)

        async def invalid() -> bool:
            current = await client.get(GREETINGS, "turncoat", NS)
            return (
                find_status_condition((current.get("status") or {}).get("conditions"), "Invalid") is not None
            )

        await wait_for(invalid, 10, message="the Invalid condition")
        await client.delete(GREETINGS, "turncoat", NS)

        async def gone() -> bool:
            try:
                await client.get(GREETINGS, "turncoat", NS)
            except NotFound:
                return True
            return False

        await wait_for(gone, 10, message="the invalid greeting deleted")
        assert deleted_externally == ["turncoat"]
