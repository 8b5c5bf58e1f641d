"""resource.Quantity parsing as apimachinery's ParseQuantity: its errors, and the values compared by the
pod resource validation."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from kubesim.validation.decode_types import decode_message, type_error
from kubesim.validation.pod import validate_pod_spec
from kubesim.validation.quantity import FORMAT_WRONG, SUFFIX_WRONG, quantity_error, quantity_value


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1", Decimal(1)),
        ("100m", Decimal("0.1")),
        ("1.5", Decimal("1.5")),
        (".5", Decimal("0.5")),
        ("1.", Decimal(1)),
        ("+2", Decimal(2)),
        ("-1", Decimal(-1)),
        ("1Gi", Decimal(2**30)),
        ("0.5Ki", Decimal(512)),
        ("3k", Decimal(3000)),
        ("1e3", Decimal(1000)),
        ("1E-3", Decimal("0.001")),
        ("1e+3", Decimal(1000)),
    ],
)
def test_quantities_that_parse(text: str, value: Decimal) -> None:
    assert quantity_error(text) is None
    assert quantity_value(text) == value


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("", FORMAT_WRONG),
        ("lots", FORMAT_WRONG),
        (" 1", FORMAT_WRONG),
        ("1GB", FORMAT_WRONG),
        ("1.5.5", FORMAT_WRONG),
        ("0x10", FORMAT_WRONG),
        ("1kk", SUFFIX_WRONG),
        ("1e", SUFFIX_WRONG),
        ("1ee3", SUFFIX_WRONG),
        ("1m5", SUFFIX_WRONG),
        ("1Ki5", SUFFIX_WRONG),
        ("1+", SUFFIX_WRONG),
    ],
)
def test_quantities_that_do_not_parse(text: str, error: str) -> None:
    assert quantity_error(text) == error
    assert quantity_value(text) is None


def test_numbers_are_quantities_and_other_json_is_not() -> None:
    assert quantity_value(2) == Decimal(2) and quantity_value(0.25) == Decimal("0.25")
    assert quantity_value(True) is None and quantity_value(None) is None


def test_a_bad_quantity_in_a_pod_is_parse_quantity_s_error_without_the_json_prefix() -> None:
    pod = {"spec": {"containers": [{"name": "c", "image": "i", "resources": {"limits": {"cpu": "lots"}}}]}}
    wrong = type_error(("", "v1", "Pod"), pod)
    assert wrong == FORMAT_WRONG and decode_message(wrong) == FORMAT_WRONG
    unmarshal = type_error(("", "v1", "Pod"), {"spec": {"containers": "x"}})
    assert unmarshal is not None and decode_message(unmarshal).startswith("json: cannot unmarshal string")
    pod["spec"]["containers"][0]["resources"] = {"limits": {"cpu": 2, "memory": "1Gi"}}
    assert type_error(("", "v1", "Pod"), pod) is None


def test_pod_resources_are_not_negative_and_requests_stay_within_limits() -> None:
    container: dict[str, Any] = {"name": "c", "image": "i", "imagePullPolicy": "Always"}
    spec = {"restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "containers": [container]}
    container["resources"] = {"limits": {"cpu": "1", "memory": "-1"}, "requests": {"cpu": "1500m"}}
    messages = {(c["field"], c["message"]) for c in validate_pod_spec(spec, "spec")}
    assert (
        "spec.containers[0].resources.limits[memory]",
        'Invalid value: "-1": must be greater than or equal to 0',
    ) in messages
    assert (
        "spec.containers[0].resources.requests[cpu]",
        'Invalid value: "1500m": must be less than or equal to cpu limit of 1',
    ) in messages
    container["resources"] = {"limits": {"cpu": "2"}, "requests": {"cpu": "2000m", "memory": "1Gi"}}
    assert not [c for c in validate_pod_spec(spec, "spec") if "resources" in c["field"]]
