"""The client's retry decisions (manager/client/retry.py), as client-go makes them."""

from __future__ import annotations

import pytest

from manager.client.errors import error_from_status
from manager.client.retry import connection_backoff, retry_after


def status(code: int, reason: str, retry_after_seconds: int | None = None) -> dict[str, object]:
    body: dict[str, object] = {"kind": "Status", "code": code, "reason": reason, "message": "m"}
    if retry_after_seconds is not None:
        body["details"] = {"retryAfterSeconds": retry_after_seconds}
    return body


@pytest.mark.parametrize(
    ("code", "reason", "header", "details", "expected"),
    [
        (429, "TooManyRequests", "3", None, 3.0),  # the header wins
        (429, "TooManyRequests", None, 2, 2.0),  # then the Status details
        (429, "TooManyRequests", None, None, 1.0),  # then 1 s
        (429, "TooManyRequests", "600", None, 30.0),  # capped
        (429, "TooManyRequests", "soon", None, 1.0),  # an unreadable header is ignored
        (503, "ServiceUnavailable", "4", None, 4.0),  # 5xx only with a Retry-After header
        (503, "ServiceUnavailable", None, 4, None),
        (500, "InternalError", None, None, None),
        (409, "Conflict", "1", None, None),  # never for client errors other than 429
        (404, "NotFound", None, None, None),
    ],
)
def test_retry_after(
    code: int, reason: str, header: str | None, details: int | None, expected: float | None
) -> None:
    error = error_from_status(status(code, reason, details))
    assert retry_after(header, error, max_wait=30.0) == expected


def test_connection_backoff_doubles_to_a_cap_with_jitter() -> None:
    for attempt, base in [(1, 0.1), (2, 0.2), (3, 0.4), (7, 5.0), (20, 5.0)]:
        delays = [connection_backoff(attempt) for _ in range(200)]
        assert all(base <= d <= 2 * base for d in delays)
        assert max(delays) > min(delays)  # jittered
