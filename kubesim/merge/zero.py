"""What the Go zero value of a built-in struct already holds: which nodes an Update finds in place.

An Update's added set (structured-merge-diff's typed Compare) holds a map, struct or non-atomic list as
a member of its own (FieldsV1's `.` marker) only when the old object had no such key at all. The apiserver
compares Go-typed objects, so a struct that exists holds, even before anything is set, every field that
is embedded by value (a struct field that is no pointer: `omitempty` does not drop it) and every field
without `omitempty` (null, for pointers, slices and maps). A create compares against the zero object: for
a built-in kind that is `metadata`, `spec`, `status` and what they hold that way (a Deployment's
`spec.template.spec`, but not its `strategy.rollingUpdate`, a pointer); a custom resource's zero object is
unstructured and holds nothing.

States of a node in the old object: ABSENT (no key: a member when added), NULL (a key holding null: not a
member itself, its children are absent) and VALUE (a struct in place: its children as the zero value has
them). Without `omitempty` is read from the schema's `required`; embedded by value from `_BY_VALUE`
(upstream types.go, which the OpenAPI schema does not tell).
"""

from __future__ import annotations

from typing import Any

from kubesim.schema import schemas
from kubesim.schema.nodes import Node, compiled

JSON = dict[str, Any]
ABSENT, NULL, VALUE = 0, 1, 2

_API = "io.k8s.api."
# struct fields with `omitempty` embedded by value (not pointers), by definition; top-level metadata,
# spec and status are values in every built-in kind and need no entry
_BY_VALUE: dict[str, tuple[str, ...]] = {
    _API + "apps.v1.DeploymentSpec": ("strategy", "template"),
    _API + "apps.v1.ReplicaSetSpec": ("template",),
    _API + "apps.v1.StatefulSetSpec": ("template", "updateStrategy"),
    _API + "apps.v1.DaemonSetSpec": ("template", "updateStrategy"),
    _API + "batch.v1.CronJobSpec": ("jobTemplate",),
    _API + "batch.v1.JobSpec": ("template",),
    _API + "batch.v1.JobTemplateSpec": ("metadata", "spec"),
    _API + "core.v1.PodTemplateSpec": ("metadata", "spec"),
    _API + "core.v1.Container": ("resources",),
    _API + "core.v1.Event": ("involvedObject", "source"),
    _API + "events.v1.Event": ("deprecatedSource", "regarding"),
    _API + "core.v1.NodeStatus": ("daemonEndpoints", "nodeInfo"),
    _API + "core.v1.NodeDaemonEndpoints": ("kubeletEndpoint",),
    _API + "core.v1.ServiceStatus": ("loadBalancer",),
    _API + "authentication.v1.TokenReviewStatus": ("user",),
    _API + "authentication.v1.SelfSubjectReviewStatus": ("userInfo",),
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionStatus": (
        "acceptedNames",
    ),
}
_TOP = ("metadata", "spec", "status")

_names: dict[int, str] = {}


def _definition_name(node: JSON) -> str | None:
    if not _names:
        _names.update((id(d), name) for name, d in schemas.definitions().items())
    return _names.get(id(node))


def _compute(node: JSON) -> dict[str, int]:
    properties = node.get("properties")
    if not isinstance(properties, dict):
        return {}  # a map: its entries are never implied
    name = _definition_name(node)
    by_value = set(_BY_VALUE.get(name or "", ()))
    if node.get("x-kubernetes-group-version-kind"):
        by_value.update(_TOP)
    held: dict[str, int] = {}
    for key in properties:
        child = schemas.child(node, key)
        if child is None:
            continue
        typed = schemas.types(child)
        if (
            "object" in typed
            and "properties" in child
            and (key in by_value or key in node.get("required", ()))
        ):
            held[key] = VALUE
        elif typed & {"object", "array"} and key in node.get("required", ()):
            held[key] = NULL
    return held


def held(node: JSON | None, custom: bool) -> dict[str, int]:
    """{field: NULL or VALUE} for the fields an existing struct of this schema holds in Go (nothing for a
    custom resource's objects, which are unstructured)."""
    if node is None or custom:
        return {}
    return node_held(compiled(node))  # kept on the schema's compiled node, whichever path asks


_NOTHING: dict[str, int] = {}


def node_held(node: Node | None) -> dict[str, int]:
    """`held` of a compiled built-in node, kept on the node (the create fast path asks it per object)."""
    if node is None:
        return _NOTHING
    found: dict[str, int] | None = node.merge_held
    if found is None:
        found = node.merge_held = _compute(node.schema)
    return found
