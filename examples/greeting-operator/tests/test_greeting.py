"""The greeting-controller against kubesim, with the manager running it as it would in a cluster."""

from pathlib import Path

import yaml
from manager import (
    CONFIGMAPS,
    CUSTOMRESOURCEDEFINITIONS,
    custom_resource_definition,
    is_status_condition_true,
)
from manager.testing import run_controllers, wait_for

from greeting_operator.controller import GreetingController
from greeting_operator.resource import GREETINGS, Greeting

CRD_FILE = Path(__file__).resolve().parents[1] / "config" / "crd" / "greetings.demo.example.com.yaml"


async def test_a_greeting_gets_its_configmap_and_ready() -> None:
    # The controller waits for its CRD (wait_for_sync=False: nothing serves greetings yet), then starts.
    async with run_controllers(GreetingController, wait_for_sync=False, nodes=0) as env:
        await env.client.create(CUSTOMRESOURCEDEFINITIONS, custom_resource_definition(Greeting))
        await env.client.create(
            GREETINGS,
            {
                "apiVersion": "demo.example.com/v1",
                "kind": "Greeting",
                "metadata": {"name": "hello", "namespace": "default"},
                "spec": {"message": "Hello"},
            },
        )

        async def ready() -> bool:
            obj = await env.client.get(GREETINGS, "hello", "default")
            return bool(is_status_condition_true((obj.get("status") or {}).get("conditions"), "Ready"))

        await wait_for(ready, timeout=30, message="the Ready condition")
        configmap = await env.client.get(CONFIGMAPS, "hello", "default")
        assert configmap["data"] == {"message": "Hello"}
        owner = configmap["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["name"], owner["controller"]) == ("Greeting", "hello", True)

        await env.client.patch(GREETINGS, "hello", {"spec": {"message": "Bye"}}, "default")

        async def followed() -> bool:
            configmap = await env.client.get(CONFIGMAPS, "hello", "default")
            return bool(configmap["data"] == {"message": "Bye"})

        await wait_for(followed, timeout=10, message="the ConfigMap to follow spec.message")


def test_the_shipped_crd_is_the_one_the_model_generates() -> None:
    shipped = yaml.safe_load(CRD_FILE.read_text())
    assert shipped == custom_resource_definition(Greeting), "regenerate it: make manifests"
