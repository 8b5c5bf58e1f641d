"""kubesim.merge.patch: the patch shapes kubectl, the Job controller and the Python clients really send."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from kubesim.merge.patch import (
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC_MERGE_PATCH,
    PatchError,
    apply_patch,
)
from kubesim.schema import schemas

POD = ("", "v1", "Pod")
DEPLOYMENT = ("apps", "v1", "Deployment")
WIDGET = ("example.com", "v1", "Widget")
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def _deployment() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "d1",
            "namespace": "default",
            "labels": {"app": "d"},
            "annotations": {LAST_APPLIED: "{}"},
        },
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "d"}},
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
            },
            "template": {
                "metadata": {"labels": {"app": "d"}},
                "spec": {
                    "containers": [
                        {
                            "name": "c",
                            "image": "nginx:1",
                            "ports": [{"containerPort": 80, "protocol": "TCP"}],
                            "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                        },
                        {"name": "sidecar", "image": "busybox"},
                    ]
                },
            },
        },
    }


def _patch(
    obj: dict[str, Any], body: Any, content_type: str, gvk: tuple[str, str, str] = DEPLOYMENT
) -> dict[str, Any]:
    return apply_patch(obj, orjson.dumps(body), content_type, gvk)


def test_kubectl_client_side_apply_patch_merges_containers_by_name_and_stores_no_directive() -> None:
    live = _deployment()
    order = [{"name": "c"}, {"name": "sidecar"}]
    body = {
        "metadata": {"annotations": {LAST_APPLIED: '{"new":1}'}},
        "spec": {
            "template": {
                "spec": {
                    "$setElementOrder/containers": order,
                    "containers": [{"image": "nginx:2", "name": "c"}],
                }
            }
        },
    }
    result = _patch(live, body, STRATEGIC_MERGE_PATCH)
    containers = result["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["c", "sidecar"]
    assert containers[0]["image"] == "nginx:2"
    assert containers[0]["env"] == live["spec"]["template"]["spec"]["containers"][0]["env"]
    assert "$setElementOrder/containers" not in orjson.dumps(result).decode()
    assert result["metadata"]["annotations"][LAST_APPLIED] == '{"new":1}'
    assert live == _deployment(), "the input must not be mutated"


def test_set_element_order_reorders_merged_list() -> None:
    order = [{"name": "sidecar"}, {"name": "c"}]
    body = {
        "spec": {
            "template": {
                "spec": {
                    "$setElementOrder/containers": order,
                    "containers": [{"name": "c", "image": "nginx:3"}],
                }
            }
        }
    }
    result = _patch(_deployment(), body, STRATEGIC_MERGE_PATCH)
    assert [c["name"] for c in result["spec"]["template"]["spec"]["containers"]] == ["sidecar", "c"]


def test_smp_null_deletes_and_new_list_element_is_appended() -> None:
    body = {
        "metadata": {"labels": {"app": None, "tier": "web"}},
        "spec": {"template": {"spec": {"containers": [{"name": "new", "image": "x"}]}}},
    }
    result = _patch(_deployment(), body, STRATEGIC_MERGE_PATCH)
    assert result["metadata"]["labels"] == {"tier": "web"}
    assert [c["name"] for c in result["spec"]["template"]["spec"]["containers"]] == ["c", "sidecar", "new"]


def test_smp_nested_merge_key_lists_env_and_ports() -> None:
    body = {
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "c",
                            "env": [{"name": "B", "value": "20"}, {"name": "C", "value": "3"}],
                            "ports": [{"containerPort": 8080}],
                        }
                    ]
                }
            }
        }
    }
    result = _patch(_deployment(), body, STRATEGIC_MERGE_PATCH)
    container = result["spec"]["template"]["spec"]["containers"][0]
    assert container["env"] == [
        {"name": "A", "value": "1"},
        {"name": "B", "value": "20"},
        {"name": "C", "value": "3"},
    ]
    assert [p["containerPort"] for p in container["ports"]] == [80, 8080]


def test_smp_patch_delete_list_element_and_replace_list() -> None:
    delete = {"spec": {"template": {"spec": {"containers": [{"$patch": "delete", "name": "sidecar"}]}}}}
    result = _patch(_deployment(), delete, STRATEGIC_MERGE_PATCH)
    assert [c["name"] for c in result["spec"]["template"]["spec"]["containers"]] == ["c"]
    containers = [{"$patch": "replace"}, {"name": "only", "image": "i"}]
    replace = {"spec": {"template": {"spec": {"containers": containers}}}}
    result = _patch(_deployment(), replace, STRATEGIC_MERGE_PATCH)
    assert result["spec"]["template"]["spec"]["containers"] == [{"name": "only", "image": "i"}]


def test_smp_map_level_replace_and_delete_directives() -> None:
    replace = {"metadata": {"labels": {"$patch": "replace", "only": "this"}}}
    assert _patch(_deployment(), replace, STRATEGIC_MERGE_PATCH)["metadata"]["labels"] == {"only": "this"}
    delete = {"spec": {"strategy": {"$patch": "delete"}}}
    assert "strategy" not in _patch(_deployment(), delete, STRATEGIC_MERGE_PATCH)["spec"]
    with pytest.raises(PatchError) as err:
        _patch(_deployment(), {"metadata": {"labels": {"$patch": "bogus"}}}, STRATEGIC_MERGE_PATCH)
    assert err.value.code == 400


def test_smp_retain_keys_clears_other_strategy_fields() -> None:
    body = {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}
    assert _patch(_deployment(), body, STRATEGIC_MERGE_PATCH)["spec"]["strategy"] == {"type": "Recreate"}


def test_smp_non_merge_lists_are_replaced() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {
            "containers": [{"name": "c", "image": "i", "args": ["a", "b"]}],
            "tolerations": [{"key": "k1"}],
        },
    }
    body = {"spec": {"containers": [{"name": "c", "args": ["z"]}], "tolerations": [{"key": "k2"}]}}
    result = _patch(pod, body, STRATEGIC_MERGE_PATCH, POD)
    assert result["spec"]["containers"][0]["args"] == ["z"]
    assert result["spec"]["tolerations"] == [{"key": "k2"}]


def test_job_controller_removes_tracking_finalizer_with_delete_from_primitive_list() -> None:
    pod = {"metadata": {"name": "p", "finalizers": ["batch.kubernetes.io/job-tracking", "other/keep"]}}
    body = {"metadata": {"$deleteFromPrimitiveList/finalizers": ["batch.kubernetes.io/job-tracking"]}}
    result = _patch(pod, body, STRATEGIC_MERGE_PATCH, POD)
    assert result["metadata"] == {"name": "p", "finalizers": ["other/keep"]}


def test_finalizers_merge_as_a_set() -> None:
    pod = {"metadata": {"name": "p", "finalizers": ["a", "b"]}}
    result = _patch(pod, {"metadata": {"finalizers": ["b", "c"]}}, STRATEGIC_MERGE_PATCH, POD)
    assert result["metadata"]["finalizers"] == ["a", "b", "c"]


def test_owner_reference_patch_delete_by_uid() -> None:
    refs = [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "u1", "controller": True},
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "uid": "u2"},
    ]
    pod = {"metadata": {"name": "p", "ownerReferences": copy.deepcopy(refs)}}
    body = {"metadata": {"ownerReferences": [{"$patch": "delete", "uid": "u1"}], "uid": "pod-uid"}}
    result = _patch(pod, body, STRATEGIC_MERGE_PATCH, POD)
    assert result["metadata"]["ownerReferences"] == [refs[1]]


def test_smp_on_custom_resource_is_415_with_the_real_message() -> None:
    schemas.register_crd_schema(WIDGET, {"type": "object", "properties": {"spec": {"type": "object"}}})
    try:
        with pytest.raises(PatchError) as err:
            _patch({"metadata": {"name": "w"}}, {"spec": {"a": 1}}, STRATEGIC_MERGE_PATCH, WIDGET)
        assert err.value.code == 415
        assert err.value.reason == "UnsupportedMediaType"
        assert err.value.message == (
            "the body of the request was in an unknown format - accepted media types include: "
            "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
        )
        assert err.value.status()["code"] == 415
        merged = _patch(
            {"metadata": {"name": "w"}, "spec": {"a": 1, "b": [1]}}, {"spec": {"b": [2]}}, MERGE_PATCH, WIDGET
        )
        assert merged["spec"] == {"a": 1, "b": [2]}
    finally:
        schemas.unregister_crd_schema(WIDGET)


def test_unknown_content_type_is_415() -> None:
    with pytest.raises(PatchError) as err:
        apply_patch({}, b"{}", "application/xml", POD)
    assert err.value.code == 415
    assert "application/strategic-merge-patch+json" in err.value.message


def test_merge_patch_rfc7386() -> None:
    obj = {
        "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "a"}, {"name": "b"}]}}},
        "metadata": {"labels": {"x": "1", "y": "2"}},
    }
    body = {
        "spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "c"}]}}},
        "metadata": {"labels": {"x": None}},
    }
    result = _patch(obj, body, "application/merge-patch+json; charset=utf-8")
    assert result == {
        "spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "c"}]}}},
        "metadata": {"labels": {"y": "2"}},
    }


def test_kubectl_scale_merge_patch() -> None:
    assert _patch(_deployment(), {"spec": {"replicas": 3}}, MERGE_PATCH)["spec"]["replicas"] == 3


def test_json_patch_ops_and_test_failure_is_422() -> None:
    ops = [
        {"op": "test", "path": "/spec/replicas", "value": 1},
        {"op": "replace", "path": "/spec/replicas", "value": 5},
        {"op": "add", "path": "/metadata/labels/new", "value": "v"},
        {"op": "remove", "path": "/metadata/annotations"},
    ]
    result = _patch(_deployment(), ops, JSON_PATCH)
    assert result["spec"]["replicas"] == 5
    assert result["metadata"]["labels"]["new"] == "v"
    assert "annotations" not in result["metadata"]
    failures = [
        [{"op": "test", "path": "/spec/replicas", "value": 9}],
        [{"op": "remove", "path": "/spec/nothing"}],
        [
            {"op": "test", "path": "/spec/replicas", "value": 1},
            {"op": "test", "path": "/metadata/name", "value": "x"},
        ],
    ]
    for operations in failures:
        with pytest.raises(PatchError) as err:
            _patch(_deployment(), operations, JSON_PATCH)
        assert err.value.status() == {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "the server rejected our request due to an error in our request",
            "reason": "Invalid",
            "details": {},
            "code": 422,
        }
    with pytest.raises(PatchError) as err:
        _patch(_deployment(), [{"op": "frobnicate", "path": "/a"}], JSON_PATCH)
    assert err.value.code == 400


def test_malformed_bodies_are_400() -> None:
    for body, content_type in [
        (b"{not json", MERGE_PATCH),
        (b'{"op": "add"}', JSON_PATCH),
        (b"[1, 2]", STRATEGIC_MERGE_PATCH),
        (b"[1]", MERGE_PATCH),
    ]:
        with pytest.raises(PatchError) as err:
            apply_patch(_deployment(), body, content_type, DEPLOYMENT)
        assert err.value.code == 400, (body, content_type)


def test_set_element_order_keeps_server_only_items_in_place() -> None:
    pod = {
        "metadata": {"name": "p"},
        "spec": {
            "containers": [
                {"name": "a", "image": "1"},
                {"name": "injected", "image": "x"},
                {"name": "b", "image": "1"},
            ]
        },
    }
    body = {
        "spec": {
            "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
            "containers": [{"name": "b", "image": "2"}, {"name": "c", "image": "3"}],
        }
    }
    result = _patch(pod, body, STRATEGIC_MERGE_PATCH, POD)
    assert [c["name"] for c in result["spec"]["containers"]] == ["a", "injected", "b", "c"]
    assert result["spec"]["containers"][2]["image"] == "2"


def test_malformed_merge_patch_says_invalid_json_patch() -> None:
    with pytest.raises(PatchError) as err:
        apply_patch(_deployment(), b"{not json", MERGE_PATCH, DEPLOYMENT)
    assert (err.value.code, err.value.reason, err.value.message) == (400, "BadRequest", "Invalid JSON Patch")


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        (MERGE_PATCH, {"metadata": {"labels": {"a": None, "b": "2"}}, "spec": {"x": {"y": 1}}}),
        (STRATEGIC_MERGE_PATCH, {"metadata": {"labels": {"a": None, "b": "2"}}, "spec": {"x": {"y": 1}}}),
        (
            JSON_PATCH,
            [
                {"op": "remove", "path": "/metadata/labels/a"},
                {"op": "add", "path": "/spec/x", "value": {"y": 1}},
            ],
        ),
    ],
)
def test_owned_patch_answers_as_the_copying_one(content_type: str, body: Any) -> None:
    """`owned=True` patches the caller's copy in place; the answer is the same as the copying path's, which
    leaves its input alone."""
    current = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "labels": {"a": "1"}},
        "spec": {"k": [1]},
    }
    before = copy.deepcopy(current)
    copied = apply_patch(current, orjson.dumps(body), content_type, POD)
    assert current == before
    owned = apply_patch(copy.deepcopy(current), orjson.dumps(body), content_type, POD, owned=True)
    assert owned == copied
    assert copied["metadata"]["labels"] == ({"b": "2"} if content_type != JSON_PATCH else {})
    assert copied["spec"] == {"k": [1], "x": {"y": 1}}
