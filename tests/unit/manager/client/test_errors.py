"""Typed API errors from Status bodies and from bare HTTP answers."""

from __future__ import annotations

import orjson
import pytest

from manager.client import errors
from manager.client.errors import error_from_response, error_from_status, is_expired


def status(code: int, reason: str, message: str = "m", **details: object) -> dict[str, object]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
        "details": details,
    }


@pytest.mark.parametrize(
    ("code", "reason", "cls"),
    [
        (404, "NotFound", errors.NotFound),
        (409, "AlreadyExists", errors.AlreadyExists),
        (409, "Conflict", errors.Conflict),
        (410, "Expired", errors.Expired),
        (410, "Gone", errors.Expired),
        (422, "Invalid", errors.Invalid),
        (403, "Forbidden", errors.Forbidden),
        (401, "Unauthorized", errors.Unauthorized),
        (429, "TooManyRequests", errors.TooManyRequests),
        (500, "InternalError", errors.ServerError),
        (503, "ServiceUnavailable", errors.ServerError),
        (504, "Timeout", errors.Timeout),
        (418, "", errors.ApiError),
        (502, "", errors.ServerError),
    ],
)
def test_status_to_error_class(code: int, reason: str, cls: type[errors.ApiError]) -> None:
    error = error_from_response(code, orjson.dumps(status(code, reason)))
    assert type(error) is cls
    assert error.status == code and error.reason == reason and error.message == "m"


def test_already_exists_is_a_conflict() -> None:
    assert isinstance(error_from_status(status(409, "AlreadyExists")), errors.Conflict)


def test_invalid_exposes_causes() -> None:
    body = status(
        422, "Invalid", causes=[{"reason": "FieldValueRequired", "field": "spec.containers"}, "junk"]
    )
    error = error_from_status(body)
    assert isinstance(error, errors.Invalid)
    assert error.causes == [{"reason": "FieldValueRequired", "field": "spec.containers"}]


def test_retry_after_seconds_from_details() -> None:
    assert error_from_status(status(429, "TooManyRequests", retryAfterSeconds=3)).retry_after_seconds == 3.0
    assert error_from_status(status(429, "TooManyRequests")).retry_after_seconds is None


def test_non_status_bodies_fall_back_to_the_http_code() -> None:
    error = error_from_response(404, b"404: Not Found")
    assert isinstance(error, errors.NotFound) and "Not Found" in error.message
    assert isinstance(error_from_response(500, b""), errors.ServerError)
    assert isinstance(error_from_response(410, b"{not json"), errors.Expired)


def test_watch_error_event_uses_the_status_code() -> None:
    error = error_from_status(status(410, "Expired", "too old resource version: 1 (5)"))
    assert isinstance(error, errors.Expired)
    assert is_expired(error)


def test_too_large_resource_version_is_expired_like() -> None:
    body = status(
        504,
        "Timeout",
        "Too large resource version: 10, current: 5",
        causes=[{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
    )
    assert is_expired(error_from_status(body))
    assert not is_expired(error_from_status(status(504, "Timeout")))
    assert not is_expired(error_from_status(status(500, "InternalError")))


def test_has_cause_reads_the_wire_name_of_a_cause_type() -> None:
    cause = {"reason": "NamespaceTerminating", "message": "namespace x is being terminated"}
    status = {"kind": "Status", "code": 403, "reason": "Forbidden", "details": {"causes": [cause]}}
    error = errors.error_from_status(status)
    assert error.has_cause("NamespaceTerminating")
    assert not error.has_cause("FieldValueInvalid")
    assert not errors.error_from_status({"code": 403, "details": {"causes": "junk"}}).has_cause("x")
