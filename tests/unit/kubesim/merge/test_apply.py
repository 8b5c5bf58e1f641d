"""kubesim.merge.apply: server-side apply and managedFields as kubectl and controllers exercise them."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubesim.merge.apply import ApplyConflict, record_update, server_side_apply
from kubesim.merge.fieldset import field_set, from_fields_v1, path_string, to_fields_v1
from kubesim.schema import schemas

DEPLOYMENT = ("apps", "v1", "Deployment")
POD = ("", "v1", "Pod")
JOB = ("batch", "v1", "Job")


def _config(
    replicas: int = 2, image: str = "nginx:1", labels: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "d",
            "namespace": "default",
            "labels": labels if labels is not None else {"app": "d"},
        },
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "d"}},
            "template": {
                "metadata": {"labels": {"app": "d"}},
                "spec": {"containers": [{"name": "c", "image": image, "ports": [{"containerPort": 80}]}]},
            },
        },
    }


def _entries(obj: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(e["manager"], e["operation"]): e for e in obj["metadata"].get("managedFields", [])}


def _paths(obj: dict[str, Any], manager: str, operation: str) -> set[str]:
    return {path_string(p) for p in from_fields_v1(_entries(obj)[(manager, operation)]["fieldsV1"])}


def test_create_by_apply_records_the_applied_fields_only() -> None:
    created = server_side_apply(None, _config(), "kubectl", False, DEPLOYMENT, now="2026-01-01T00:00:00Z")
    assert created["spec"]["replicas"] == 2
    entry = _entries(created)[("kubectl", "Apply")]
    assert entry["apiVersion"] == "apps/v1"
    assert entry["time"] == "2026-01-01T00:00:00Z"
    assert entry["fieldsType"] == "FieldsV1"
    assert entry["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"] == {
        'k:{"name":"c"}': {
            ".": {},
            "f:image": {},
            "f:name": {},
            "f:ports": {'k:{"containerPort":80,"protocol":"TCP"}': {".": {}, "f:containerPort": {}}},
        }
    }
    assert "f:name" not in entry["fieldsV1"]["f:metadata"], "name/namespace are never tracked"
    assert entry["fieldsV1"]["f:spec"]["f:selector"] == {}, "LabelSelector is an atomic map"


def test_apply_twice_is_stable_and_changes_values() -> None:
    first = server_side_apply(None, _config(), "kubectl", False, DEPLOYMENT, now="t1")
    again = server_side_apply(copy.deepcopy(first), _config(), "kubectl", False, DEPLOYMENT, now="t2")
    assert again == first, "re-applying the same configuration changes nothing, not even the time"
    changed = server_side_apply(first, _config(replicas=3, image="nginx:2"), "kubectl", False, DEPLOYMENT)
    assert changed["spec"]["replicas"] == 3
    assert changed["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:2"
    assert len(changed["metadata"]["managedFields"]) == 1


def test_conflict_with_another_applier_and_force() -> None:
    live = server_side_apply(None, _config(), "kubectl", False, DEPLOYMENT)
    with pytest.raises(ApplyConflict) as err:
        server_side_apply(live, _config(replicas=5), "other", False, DEPLOYMENT)
    assert err.value.code == 409
    assert err.value.status == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'Apply failed with 1 conflict: conflict with "kubectl": .spec.replicas',
        "reason": "Conflict",
        "details": {
            "causes": [
                {
                    "reason": "FieldManagerConflict",
                    "message": 'conflict with "kubectl"',
                    "field": ".spec.replicas",
                }
            ]
        },
        "code": 409,
    }
    shared = server_side_apply(live, _config(), "other", False, DEPLOYMENT)
    assert ".spec.replicas" in _paths(shared, "other", "Apply")
    assert ".spec.replicas" in _paths(shared, "kubectl", "Apply"), "same value: ownership is shared"
    forced = server_side_apply(live, _config(replicas=5), "other", True, DEPLOYMENT)
    assert forced["spec"]["replicas"] == 5
    assert ".spec.replicas" not in _paths(forced, "kubectl", "Apply")
    assert ".spec.replicas" in _paths(forced, "other", "Apply")


def test_conflict_with_update_manager_names_its_api_version() -> None:
    live = server_side_apply(None, _config(), "kubectl", False, DEPLOYMENT)
    scaled = copy.deepcopy(live)
    scaled["spec"]["replicas"] = 7
    scaled["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:9"
    record_update(live, scaled, "kubectl-client-side-apply", DEPLOYMENT)
    assert _paths(scaled, "kubectl-client-side-apply", "Update") == {
        ".spec.replicas",
        '.spec.template.spec.containers[name="c"].image',
    }
    assert ".spec.replicas" not in _paths(scaled, "kubectl", "Apply"), "updates take fields over"
    with pytest.raises(ApplyConflict) as err:
        server_side_apply(scaled, _config(), "kubectl", False, DEPLOYMENT)
    assert err.value.status["message"] == (
        'Apply failed with 2 conflicts: conflicts with "kubectl-client-side-apply" using apps/v1:\n'
        "- .spec.replicas\n"
        '- .spec.template.spec.containers[name="c"].image'
    )
    assert [c["field"] for c in err.value.status["details"]["causes"]] == [
        ".spec.replicas",
        '.spec.template.spec.containers[name="c"].image',
    ]
    assert err.value.status["details"]["causes"][0]["message"] == (
        'conflict with "kubectl-client-side-apply" using apps/v1'
    )


def test_fields_dropped_from_the_config_are_removed_unless_owned_elsewhere() -> None:
    config = _config(labels={"app": "d", "tier": "web"})
    config["spec"]["template"]["spec"]["containers"].append({"name": "sidecar", "image": "busybox"})
    live = server_side_apply(None, config, "kubectl", False, DEPLOYMENT)
    annotated = copy.deepcopy(live)
    annotated["metadata"]["annotations"] = {"note": "mine"}
    annotated["metadata"]["labels"]["tier"] = "web"
    record_update(live, annotated, "someone", DEPLOYMENT)
    slim = _config(labels={"app": "d"})
    result = server_side_apply(annotated, slim, "kubectl", False, DEPLOYMENT)
    assert [c["name"] for c in result["spec"]["template"]["spec"]["containers"]] == ["c"]
    assert result["metadata"]["labels"] == {"app": "d"}, "an unchanged write does not take ownership"
    assert result["metadata"]["annotations"] == {"note": "mine"}
    bare = _config(labels={})
    del bare["metadata"]["labels"]
    stripped = server_side_apply(live, bare, "kubectl", False, DEPLOYMENT)
    assert "labels" not in stripped["metadata"], "an emptied map disappears like Go's omitempty"


def test_removed_label_owned_by_update_manager_stays() -> None:
    live = server_side_apply(None, _config(labels={"app": "d", "tier": "web"}), "kubectl", False, DEPLOYMENT)
    touched = copy.deepcopy(live)
    touched["metadata"]["labels"]["tier"] = "db"
    record_update(live, touched, "someone", DEPLOYMENT)
    result = server_side_apply(touched, _config(labels={"app": "d"}), "kubectl", False, DEPLOYMENT)
    assert result["metadata"]["labels"] == {"app": "d", "tier": "db"}


def test_record_update_on_create_marks_new_maps_and_list_items() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "p",
            "namespace": "default",
            "labels": {"run": "p"},
            "uid": "u",
            "resourceVersion": "1",
        },
        "spec": {"containers": [{"name": "c", "image": "i", "resources": {}}], "restartPolicy": "Never"},
        "status": {"phase": "Pending"},
    }
    record_update(None, pod, "kubectl-create", POD, now="t")
    entry = _entries(pod)[("kubectl-create", "Update")]
    assert entry["fieldsV1"] == {
        "f:metadata": {"f:labels": {".": {}, "f:run": {}}},
        "f:spec": {
            "f:containers": {'k:{"name":"c"}': {".": {}, "f:image": {}, "f:name": {}, "f:resources": {}}},
            "f:restartPolicy": {},
        },
    }
    assert "subresource" not in entry


def test_status_writes_track_only_status_and_noop_updates_record_nothing() -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "managedFields": []},
        "spec": {"parallelism": 1},
        "status": {},
    }
    record_update(None, job, "kubectl-create", JOB)
    before = copy.deepcopy(job)
    after = copy.deepcopy(job)
    after["status"] = {"active": 1, "startTime": "2026-01-01T00:00:00Z"}
    record_update(before, after, "job-controller", JOB, subresource="status")
    entry = _entries(after)[("job-controller", "Update")]
    assert entry["subresource"] == "status"
    assert entry["fieldsV1"] == {"f:status": {"f:active": {}, "f:startTime": {}}}
    unchanged = copy.deepcopy(after)
    record_update(after, unchanged, "someone-else", JOB)
    assert ("someone-else", "Update") not in _entries(unchanged)


def test_client_supplied_managed_fields_are_the_base() -> None:
    live = server_side_apply(None, _config(), "kubectl", False, DEPLOYMENT)
    cleared = copy.deepcopy(live)
    cleared["metadata"]["managedFields"] = [
        {
            "manager": "mine",
            "operation": "Update",
            "apiVersion": "apps/v1",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {"f:replicas": {}}},
        }
    ]
    record_update(live, cleared, "mine", DEPLOYMENT)
    assert [e["manager"] for e in cleared["metadata"]["managedFields"]] == ["mine"]


def test_set_lists_and_custom_resources() -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "finalizers": ["a/b"]}}
    applied = server_side_apply(None, pod, "ctl", False, POD)
    assert applied["metadata"]["managedFields"][0]["fieldsV1"] == {
        "f:metadata": {"f:finalizers": {'v:"a/b"': {}}}
    }
    other = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "finalizers": ["c/d"]}}
    both = server_side_apply(applied, other, "ctl2", False, POD)
    assert both["metadata"]["finalizers"] == ["a/b", "c/d"]
    gvk = ("example.com", "v1", "Widget")
    schemas.register_crd_schema(
        gvk,
        {
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {"items": {"type": "array", "items": {"type": "string"}}},
                }
            },
        },
    )
    try:
        widget = {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": "w"},
            "spec": {"items": ["a", "b"], "size": 1},
        }
        created = server_side_apply(None, widget, "ctl", False, gvk)
        assert created["metadata"]["managedFields"][0]["fieldsV1"] == {
            "f:spec": {"f:items": {}, "f:size": {}}
        }
        record = copy.deepcopy(created)
        record["spec"]["extra"] = {"x": 1}
        record_update(created, record, "upd", gvk)
        assert _entries(record)[("upd", "Update")]["fieldsV1"] == {
            "f:spec": {"f:extra": {".": {}, "f:x": {}}}
        }
    finally:
        schemas.unregister_crd_schema(gvk)


def test_fields_v1_round_trip() -> None:
    fields = field_set(_config(), schemas.root(DEPLOYMENT))
    assert from_fields_v1(to_fields_v1(fields)) == fields


def test_migrated_entry_owning_a_map_node_does_not_prune_the_map() -> None:
    """kubectl --server-side first rewrites the client-side-apply entry into an Apply entry (csaupgrade),
    which owns map nodes such as `f:labels` with `.`; a later apply must keep the map's applied keys."""
    live = server_side_apply(None, _config(), "kubectl", False, DEPLOYMENT)
    live["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:template"]["f:metadata"]["f:labels"][
        "."
    ] = {}
    live["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:progressDeadlineSeconds"] = {}
    live["spec"]["progressDeadlineSeconds"] = 600
    result = server_side_apply(live, _config(), "kubectl", False, DEPLOYMENT)
    assert result["spec"]["template"]["metadata"]["labels"] == {"app": "d"}
    assert "progressDeadlineSeconds" not in result["spec"], "a leaf no longer applied is pruned"


@pytest.mark.parametrize("gvk", [POD, DEPLOYMENT])
def test_create_fast_path_matches_the_general_comparison(gvk: tuple[str, str, str]) -> None:
    obj: dict[str, Any] = (
        _config(labels={"a": "b"})
        if gvk == DEPLOYMENT
        else {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "uid": "u", "finalizers": ["x/y"], "annotations": {"k": "v"}},
            "spec": {
                "containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 1}], "args": ["a"]}],
                "securityContext": {},
                "tolerations": [{"key": "k"}],
            },
            "status": {"phase": "Pending"},
        }
    )
    fast, general = copy.deepcopy(obj), copy.deepcopy(obj)
    record_update(None, fast, "m", gvk, now="t")
    record_update({}, general, "m", gvk, now="t")
    assert fast["metadata"]["managedFields"] == general["metadata"]["managedFields"]


def test_first_apply_to_an_unmanaged_object_conflicts_with_before_first_apply() -> None:
    live = _config()
    live["metadata"]["uid"] = "u"
    with pytest.raises(ApplyConflict) as err:
        server_side_apply(live, _config(replicas=9), "kubectl", False, DEPLOYMENT)
    assert err.value.status["message"] == (
        'Apply failed with 1 conflict: conflict with "before-first-apply" using apps/v1: .spec.replicas'
    )
    same = server_side_apply(live, _config(), "kubectl", False, DEPLOYMENT)
    assert {e["manager"] for e in same["metadata"]["managedFields"]} == {"before-first-apply", "kubectl"}


_STORED_META = {
    "name": "n",
    "namespace": "ns",
    "uid": "u",
    "resourceVersion": "7",
    "generation": 1,
    "creationTimestamp": "2026-01-01T00:00:00Z",
    "selfLink": "/x",
    "clusterName": "c",
}


@pytest.mark.parametrize(
    ("gvk", "obj"),
    [
        pytest.param(
            ("", "v1", "ConfigMap"),
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {**_STORED_META, "labels": {"a": "b"}, "finalizers": ["x/y"]},
                "data": {"greeting": "hi"},
            },
            id="configmap",
        ),
        pytest.param(
            ("", "v1", "ConfigMap"),
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": dict(_STORED_META)},
            id="only-untracked-metadata",
        ),
        pytest.param(
            ("", "v1", "ConfigMap"),
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {**_STORED_META, "managedFields": [], "annotations": {}, "labels": None},
                "data": {},
            },
            id="empty-and-null-metadata",
        ),
        pytest.param(
            ("", "v1", "Event"),
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": dict(_STORED_META),
                "involvedObject": {"kind": "Greeting", "name": "g", "uid": "g-uid"},
                "reason": "Greeted",
                "message": "m",
                "type": "Normal",
                "source": {"component": "c"},
                "count": 1,
            },
            id="event",
        ),
        pytest.param(
            ("example.com", "v1", "Widget"),
            {
                "apiVersion": "example.com/v1",
                "kind": "Widget",
                "metadata": dict(_STORED_META),
                "spec": {"items": ["a"], "size": 1, "nested": {"k": "v"}},
                "status": {"ready": False},
            },
            id="custom-resource",
        ),
        pytest.param(
            ("example.com", "v1", "Widget"),
            {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": dict(_STORED_META)},
            id="custom-resource-only-untracked",
        ),
    ],
)
def test_create_fast_path_leaves_out_untracked_metadata_as_the_general_comparison(
    gvk: tuple[str, str, str], obj: dict[str, Any]
) -> None:
    schemas.register_crd_schema(
        ("example.com", "v1", "Widget"),
        {
            "type": "object",
            "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
        },
    )
    try:
        fast, general = copy.deepcopy(obj), copy.deepcopy(obj)
        record_update(None, fast, "m", gvk, now="t")
        record_update({}, general, "m", gvk, now="t")
    finally:
        schemas.unregister_crd_schema(("example.com", "v1", "Widget"))
    assert fast["metadata"].get("managedFields") == general["metadata"].get("managedFields")
    assert fast == general


def test_a_status_write_keeps_other_entries_as_stored_and_takes_their_status_fields() -> None:
    gvk = ("example.com", "v1", "Widget")
    schemas.register_crd_schema(
        gvk,
        {
            "type": "object",
            "properties": {
                "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
        },
    )
    try:
        obj: dict[str, Any] = {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": "w"},
            "spec": {"a": 1},
        }
        record_update(None, obj, "creator", gvk, now="t1")
        first = copy.deepcopy(obj)
        first["status"] = {"ready": False, "n": 1}
        record_update(obj, first, "early", gvk, "status", now="t2")
        second = copy.deepcopy(first)
        second["status"]["ready"] = True
        record_update(first, second, "late", gvk, "status", now="t3")
        by_manager = {e["manager"]: e for e in second["metadata"]["managedFields"]}
        assert by_manager["creator"] is second["metadata"]["managedFields"][0]
        assert by_manager["creator"]["fieldsV1"] == {"f:spec": {".": {}, "f:a": {}}}
        assert by_manager["early"]["fieldsV1"] == {"f:status": {".": {}, "f:n": {}}}
        assert by_manager["late"]["fieldsV1"] == {"f:status": {"f:ready": {}}}
    finally:
        schemas.unregister_crd_schema(gvk)
