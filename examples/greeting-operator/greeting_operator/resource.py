"""The Greeting custom resource (demo.example.com/v1): its spec and status as pydantic models.

The CustomResourceDefinition is generated from them:
    aiokcm crd greeting_operator.resource:Greeting
prints it; config/crd/ ships it. Edit the models, then regenerate it with `make manifests`.
"""

from typing import Any

from manager import CustomResource, PrinterColumn
from pydantic import BaseModel, Field


class GreetingSpec(BaseModel):
    """What a Greeting asks for."""

    message: str = Field(min_length=1, description="The text the owned ConfigMap holds.")


class GreetingStatus(BaseModel):
    """What the controller last did. `conditions` as a list of dicts survives the API server's pruning."""

    conditions: list[dict[str, Any]] = []


class Greeting(CustomResource):
    """A Greeting: its controller keeps a ConfigMap of the same name holding spec.message."""

    group = "demo.example.com"
    version = "v1"
    kind = "Greeting"
    printer_columns = (
        PrinterColumn("Message", "string", ".spec.message"),
        PrinterColumn("Ready", "string", '.status.conditions[?(@.type=="Ready")].status'),
    )
    spec: GreetingSpec
    status: GreetingStatus | None = None


GREETINGS = Greeting.gvr()
