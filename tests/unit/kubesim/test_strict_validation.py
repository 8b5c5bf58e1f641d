"""The strict-input checks as pure functions: stored nesting depth, Go-style query parameters, the decode
errors of the fields an SRE found accepted, and the Status for what aiohttp refuses."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp import web
from aiohttp.http_exceptions import BadHttpMessage, BadStatusLine, LineTooLong
from aiohttp.test_utils import make_mocked_request

from kubesim.api.params import parse_bool, parse_int
from kubesim.server.limits import MAX_HEADER_BYTES, header_bytes_error, http_error, protocol_error
from kubesim.status.errors import ApiError
from kubesim.validation.decode_types import type_error
from kubesim.validation.meta_types import meta_type_error
from kubesim.validation.nesting import MAX_DEPTH, deeper_than

DEPLOYMENT = ("apps", "v1", "Deployment")
JOB = ("batch", "v1", "Job")
CONFIGMAP = ("", "v1", "ConfigMap")


def _nest(levels: int, leaf: Any = 1, in_list: bool = False) -> Any:
    value = leaf
    for i in range(levels):
        value = [value] if in_list and i % 2 else {"a": value}
    return value


@pytest.mark.parametrize("in_list", [False, True])
def test_depth_limit_is_exact(in_list: bool) -> None:
    assert not deeper_than(_nest(MAX_DEPTH, in_list=in_list))
    assert deeper_than(_nest(MAX_DEPTH + 1, in_list=in_list))
    assert not deeper_than(_nest(MAX_DEPTH - 1, leaf={}, in_list=in_list))  # an empty container is a level
    assert deeper_than(_nest(MAX_DEPTH, leaf=[], in_list=in_list))


def test_depth_check_finds_one_deep_branch_among_shallow_ones_and_never_recurses() -> None:
    wide = {f"k{i}": {"x": [1, 2, {"y": "z"}]} for i in range(50)}
    assert not deeper_than(wide)
    wide["k7"]["x"].append(_nest(MAX_DEPTH))
    assert deeper_than(wide)
    assert deeper_than(_nest(100_000))  # far past Python's recursion limit
    assert not deeper_than("scalar") and not deeper_than(None) and deeper_than([[1]], limit=1)


@pytest.mark.parametrize(
    ("raw", "value"), [("5", 5), ("+5", 5), ("-5", -5), ("0", 0), (str(2**63 - 1), 2**63 - 1)]
)
def test_parse_int_takes_what_go_parseint_takes(raw: str, value: int) -> None:
    assert parse_int(raw, "limit") == value


@pytest.mark.parametrize("raw", [" 5", "5 ", "1_000", "1.5", "1e3", "x", "-x", "--1", "0x10", "٣"])
def test_parse_int_refuses_what_go_parseint_refuses(raw: str) -> None:
    with pytest.raises(ApiError) as caught:
        parse_int(raw, "timeoutSeconds")
    assert caught.value.code == 400
    assert caught.value.message == (
        f'strconv.ParseInt: parsing "{raw}": invalid syntax for parameter timeoutSeconds'
    )


@pytest.mark.parametrize("raw", [str(2**63), str(-(2**63) - 1), "9" * 30])
def test_parse_int_range_is_int64(raw: str) -> None:
    with pytest.raises(ApiError, match="value out of range for parameter limit"):
        parse_int(raw, "limit")


def test_parse_bool_is_go_parsebool() -> None:
    assert [parse_bool(v, "watch") for v in ("1", "t", "TRUE", "0", "F", "", None)] == [
        True,
        True,
        True,
        False,
        False,
        False,
        None,
    ]
    with pytest.raises(ApiError, match='parsing "yes": invalid syntax for parameter watch'):
        parse_bool("yes", "watch")


@pytest.mark.parametrize(
    ("gvk", "obj", "message"),
    [
        (
            JOB,
            {"spec": {"podFailurePolicy": "oops"}},
            "string into Go struct field JobSpec.spec.podFailurePolicy of type v1.PodFailurePolicy",
        ),
        (
            DEPLOYMENT,
            {"spec": {"template": "oops"}},
            "string into Go struct field DeploymentSpec.spec.template of type v1.PodTemplateSpec",
        ),
        (
            DEPLOYMENT,
            {"spec": {"selector": {"matchLabels": ["a"]}}},
            "array into Go struct field LabelSelector.spec.selector.matchLabels of type map[string]string",
        ),
        (
            DEPLOYMENT,
            {"spec": {"replicas": "3"}},
            "string into Go struct field DeploymentSpec.spec.replicas of type int32",
        ),
        (
            DEPLOYMENT,
            {"spec": {"replicas": 1.5}},
            "number 1.5 into Go struct field DeploymentSpec.spec.replicas of type int32",
        ),
        (
            DEPLOYMENT,
            {"spec": {"replicas": True}},
            "bool into Go struct field DeploymentSpec.spec.replicas of type int32",
        ),
        (
            DEPLOYMENT,
            {"spec": {"replicas": 2**31}},
            "number 2147483648 into Go struct field DeploymentSpec.spec.replicas of type int32",
        ),
        (
            DEPLOYMENT,
            {"spec": {"replicas": 2**63}},
            "number 9223372036854775808 into Go struct field DeploymentSpec.spec.replicas of type int32",
        ),
        (
            JOB,
            {"spec": {"completions": 2.5}},
            "number 2.5 into Go struct field JobSpec.spec.completions of type int32",
        ),
        (
            JOB,
            {"spec": {"activeDeadlineSeconds": 2**63}},
            "number 9223372036854775808 into Go struct field JobSpec.spec.activeDeadlineSeconds"
            " of type int64",
        ),
        (CONFIGMAP, {"data": {"k": 1}}, "number into Go struct field ConfigMap.data of type string"),
        (CONFIGMAP, {"data": {"k": False}}, "bool into Go struct field ConfigMap.data of type string"),
        (
            ("autoscaling", "v1", "Scale"),
            {"spec": {"replicas": "3"}},
            "string into Go struct field ScaleSpec.spec.replicas of type int32",
        ),
    ],
)
def test_wrongly_typed_fields_are_go_decode_errors(gvk: tuple[str, str, str], obj: Any, message: str) -> None:
    assert type_error(gvk, obj) == "cannot unmarshal " + message


@pytest.mark.parametrize(
    ("gvk", "obj"),
    [
        (DEPLOYMENT, {"spec": {"replicas": 2**31 - 1}}),
        (DEPLOYMENT, {"spec": {"replicas": -(2**31)}}),
        (DEPLOYMENT, {"spec": {"replicas": None, "template": None}}),  # null: Go's zero value
        (JOB, {"spec": {"activeDeadlineSeconds": 2**63 - 1}}),
        (CONFIGMAP, {"data": {"k": "v"}, "binaryData": {"b": "AA=="}}),
    ],
)
def test_well_typed_fields_pass(gvk: tuple[str, str, str], obj: Any) -> None:
    assert type_error(gvk, obj) is None


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (LineTooLong("x" * 10, MAX_HEADER_BYTES), 431),
        (BadHttpMessage("Too many headers received"), 431),
        (BadStatusLine("BR\x00KEN"), 400),
        (BadHttpMessage("Invalid header name"), 400),
        (None, 400),
    ],
)
def test_protocol_errors_become_statuses(exc: BaseException | None, code: int) -> None:
    err = protocol_error(400, exc)
    status = err.status()
    assert (err.code, status["kind"], status["code"], status["status"]) == (code, "Status", code, "Failure")
    assert len(status["message"]) < 300  # no echo of a megabyte of the request


def test_a_server_error_in_the_protocol_is_an_internal_status() -> None:
    assert protocol_error(500, RuntimeError("boom")).status()["reason"] == "InternalError"


@pytest.mark.parametrize(
    ("meta", "message"),
    [
        ([], "array into Go struct field Pod.metadata of type v1.ObjectMeta"),
        ({"name": 5}, "number into Go struct field ObjectMeta.metadata.name of type string"),
        ({"uid": 5}, "number into Go struct field ObjectMeta.metadata.uid of type types.UID"),
        ({"labels": {"a": 1}}, "number into Go struct field ObjectMeta.metadata.labels of type string"),
        (
            {"labels": ["a"]},
            "array into Go struct field ObjectMeta.metadata.labels of type map[string]string",
        ),
        ({"finalizers": [True]}, "bool into Go struct field ObjectMeta.metadata.finalizers of type string"),
        ({"generation": 1.5}, "number into Go struct field ObjectMeta.metadata.generation of type int64"),
        (
            {"deletionGracePeriodSeconds": "30"},
            "string into Go struct field ObjectMeta.metadata.deletionGracePeriodSeconds of type int64",
        ),
        (
            {"ownerReferences": [{"uid": 5}]},
            "number into Go struct field OwnerReference.metadata.ownerReferences.uid of type types.UID",
        ),
        (
            {"ownerReferences": [{"controller": "yes"}]},
            "string into Go struct field OwnerReference.metadata.ownerReferences.controller of type bool",
        ),
        (
            {"ownerReferences": {"a": 1}},
            "object into Go struct field ObjectMeta.metadata.ownerReferences of type []v1.OwnerReference",
        ),
        (
            {"managedFields": [{"operation": 1}]},
            "number into Go struct field ManagedFieldsEntry.metadata.managedFields.operation"
            " of type v1.ManagedFieldsOperationType",
        ),
    ],
)
def test_wrongly_typed_metadata_is_a_go_decode_error(meta: Any, message: str) -> None:
    assert meta_type_error(meta, "Pod") == "cannot unmarshal " + message


def test_well_typed_metadata_passes() -> None:
    meta = {
        "name": "p",
        "labels": {"a": "b", "n": None},
        "finalizers": ["f"],
        "generation": 3,
        "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "x", "uid": "u", "controller": True}],
        "managedFields": [{"manager": "m", "operation": "Apply", "fieldsV1": {"f:a": {}}}],
    }
    assert meta_type_error(meta, "Pod") is None


def test_aiohttp_http_errors_become_statuses() -> None:
    assert (
        http_error(web.HTTPNotFound()).status()["message"]
        == "the server could not find the requested resource"
    )
    too_large = http_error(web.HTTPRequestEntityTooLarge(max_size=10, actual_size=20)).status()
    assert (too_large["code"], too_large["reason"]) == (413, "RequestEntityTooLarge")
    not_allowed = http_error(web.HTTPMethodNotAllowed("X", ["GET"])).status()
    assert (not_allowed["code"], not_allowed["message"]) == (405, "Method Not Allowed")  # not "405: ..."


def test_header_bytes_count_the_request_line_and_every_header() -> None:
    small = make_mocked_request("GET", "/api/v1", headers={"X": "y"})
    assert header_bytes_error(small) is None
    big = make_mocked_request("GET", "/api/v1", headers={f"X-{i}": "v" * 100_000 for i in range(11)})
    err = header_bytes_error(big)
    assert err is not None and err.code == 431 and str(MAX_HEADER_BYTES) in err.message
