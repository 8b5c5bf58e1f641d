"""Wrongly typed fields of built-in objects: Go's decode error text, as kube-apiserver answers (400)."""

from __future__ import annotations

from typing import Any

import pytest

from kubesim.validation.decode_types import type_error

DEPLOYMENT = ("apps", "v1", "Deployment")


def _deployment(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "replicas": 1,
        "selector": {"matchLabels": {"a": "b"}},
        "template": {
            "metadata": {"labels": {"a": "b"}},
            "spec": {"containers": [{"name": "c", "image": "i", "resources": {"limits": {"cpu": 1}}}]},
        },
    }
    return {"apiVersion": "apps/v1", "kind": "Deployment", "spec": {**base, **spec}}


def test_valid_object_passes() -> None:
    assert type_error(DEPLOYMENT, _deployment()) is None


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            {"replicas": 2**31},
            "number 2147483648 into Go struct field DeploymentSpec.spec.replicas of type int32",
        ),
        ({"replicas": "3"}, "string into Go struct field DeploymentSpec.spec.replicas of type int32"),
        ({"replicas": 1.5}, "number 1.5 into Go struct field DeploymentSpec.spec.replicas of type int32"),
        ({"replicas": True}, "bool into Go struct field DeploymentSpec.spec.replicas of type int32"),
        (
            {"template": "oops"},
            "string into Go struct field DeploymentSpec.spec.template of type v1.PodTemplateSpec",
        ),
        (
            {"selector": {"matchLabels": ["a"]}},
            "array into Go struct field LabelSelector.spec.selector.matchLabels of type map[string]string",
        ),
        (
            {"template": {"spec": {"containers": [{"name": "c", "env": [{"name": "a", "value": 3}]}]}}},
            "number into Go struct field EnvVar.spec.template.spec.containers.env.value of type string",
        ),
    ],
)
def test_wrong_types_name_struct_path_and_go_type(spec: dict[str, Any], expected: str) -> None:
    assert type_error(DEPLOYMENT, _deployment(**spec)) == f"cannot unmarshal {expected}"


def test_int64_range_and_null() -> None:
    job = ("batch", "v1", "Job")
    assert type_error(job, {"spec": {"activeDeadlineSeconds": 2**63 - 1, "completions": None}}) is None
    assert "of type int64" in str(type_error(job, {"spec": {"activeDeadlineSeconds": -(2**63) - 1}}))


def test_map_values_and_custom_resources() -> None:
    assert type_error(("", "v1", "ConfigMap"), {"data": {"a": 1}}) == (
        "cannot unmarshal number into Go struct field ConfigMap.data of type string"
    )
    assert type_error(("example.com", "v1", "Unknown"), {"spec": 1}) is None
