"""kubesim.schema.schemas: the bundled Kubernetes definitions, indexed by GVK, with merge semantics."""

from __future__ import annotations

from kubesim.schema import schemas

POD = ("", "v1", "Pod")
DEPLOYMENT = ("apps", "v1", "Deployment")
JOB = ("batch", "v1", "Job")


def test_loads_the_server_version_and_indexes_kinds() -> None:
    assert schemas.schema_version() == f"v1.{schemas.SERVER_MINOR}.0-local"
    assert schemas.definition_name(POD) == "io.k8s.api.core.v1.Pod"
    assert schemas.definition_name(JOB) == "io.k8s.api.batch.v1.Job"
    assert schemas.definition_name(("events.k8s.io", "v1", "Event")) == "io.k8s.api.events.v1.Event"
    assert (
        schemas.definition_name(("coordination.k8s.io", "v1", "Lease")) == "io.k8s.api.coordination.v1.Lease"
    )
    assert (
        schemas.definition_name(("", "v1", "DeleteOptions"))
        == "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"
    )
    assert schemas.definition_name(("example.com", "v1", "Nope")) is None
    assert schemas.is_builtin(POD) and not schemas.is_custom(POD)


def test_schema_version_choice_prefers_the_server_minor() -> None:
    names = ["v1.31.0-local", "v1.32.0-local", "v1.32.0-local-strict", "v1.37.0-local"]
    assert schemas._schema_dir_name(names) == "v1.32.0-local"
    assert schemas._schema_dir_name(["v1.30.0-local", "v1.36.0-local"]) == "v1.36.0-local"


def test_navigation_resolves_refs_and_reports_merge_semantics() -> None:
    containers = schemas.field_info_at(POD, ["spec", "containers"])
    assert (containers.patch_strategy, containers.merge_key) == ("merge", "name")
    assert (containers.list_type, containers.list_map_keys) == ("map", ("name",))
    ports = schemas.field_info_at(POD, ["spec", "containers", 0, "ports"])
    assert ports.merge_key == "containerPort"
    assert ports.list_map_keys == ("containerPort", "protocol")
    finalizers = schemas.field_info_at(POD, ["metadata", "finalizers"])
    assert (finalizers.patch_strategy, finalizers.merge_key, finalizers.list_type) == ("merge", None, "set")
    owners = schemas.field_info_at(POD, ["metadata", "ownerReferences"])
    assert (owners.merge_key, owners.list_map_keys) == ("uid", ("uid",))
    assert schemas.field_info_at(DEPLOYMENT, ["spec", "selector"]).map_type == "atomic"
    assert schemas.field_info_at(DEPLOYMENT, ["spec", "strategy"]).patch_strategy == "retainKeys"
    assert schemas.field_info_at(POD, ["spec", "containers", 0, "args"]).list_type == "atomic"
    assert schemas.field_info_at(JOB, ["status", "conditions"]).merge_key == "type"
    labels = schemas.node_at(POD, ["metadata", "labels"])
    assert labels is not None and schemas.child(labels, "anything") is not None
    assert schemas.node_at(POD, ["spec", "nonsense"]) is None
    assert schemas.field_info(None) == schemas.FieldInfo()


def test_crd_schemas_register_with_object_meta() -> None:
    gvk = ("example.com", "v1", "Widget")
    schemas.register_crd_schema(
        gvk,
        {
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "tags": {
                            "type": "array",
                            "items": {"type": "string"},
                            "x-kubernetes-list-type": "set",
                        }
                    },
                }
            },
        },
    )
    try:
        assert schemas.is_custom(gvk) and not schemas.is_builtin(gvk)
        assert schemas.field_info_at(gvk, ["spec", "tags"]).list_type == "set"
        assert schemas.field_info_at(gvk, ["metadata", "ownerReferences"]).merge_key == "uid"
        assert gvk in schemas.crd_schemas()
    finally:
        schemas.unregister_crd_schema(gvk)
    assert schemas.root(gvk) is None


def test_root_is_remembered_and_follows_crd_schema_changes() -> None:
    deployment = ("apps", "v1", "Deployment")
    name = schemas.definition_name(deployment)
    assert name is not None
    assert schemas.root(deployment) is schemas.root(deployment)
    assert schemas.root(deployment) == schemas.resolve(schemas.definitions()[name])
    assert schemas.root(("nowhere.example.com", "v1", "Nothing")) is None
    gvk = ("remembered.example.com", "v1", "Thing")
    assert schemas.root(gvk) is None
    try:
        schemas.register_crd_schema(gvk, {"type": "object", "properties": {"spec": {"type": "string"}}})
        assert schemas.root(gvk)["properties"]["spec"] == {"type": "string"}  # type: ignore[index]
        schemas.register_crd_schema(gvk, {"type": "object", "properties": {"spec": {"type": "integer"}}})
        assert schemas.root(gvk)["properties"]["spec"] == {"type": "integer"}  # type: ignore[index]
    finally:
        schemas.unregister_crd_schema(gvk)
    assert schemas.root(gvk) is None
