"""Typed API errors built from the API server's `Status` body (reason first, HTTP code as a fallback)."""

from __future__ import annotations

from typing import Any

import orjson


class ApiError(Exception):
    """Any non-2xx answer from the API server. `status` is the HTTP code, `reason` the Status reason."""

    def __init__(
        self, status: int, reason: str = "", message: str = "", body: dict[str, Any] | None = None
    ) -> None:
        self.status = status
        self.reason = reason
        self.message = message
        self.body: dict[str, Any] = body or {}
        super().__init__(f"{status} {reason}: {message}" if message else f"{status} {reason}")

    @property
    def details(self) -> dict[str, Any]:
        details = self.body.get("details")
        return details if isinstance(details, dict) else {}

    def has_cause(self, cause: str) -> bool:
        """Whether `details.causes` names `cause` (apimachinery's `HasStatusCause`); on the wire a cause's
        type is its `reason` field, e.g. "NamespaceTerminating" for a create in a terminating namespace."""
        causes = self.details.get("causes")
        return isinstance(causes, list) and any(
            isinstance(c, dict) and c.get("reason") == cause for c in causes
        )

    @property
    def retry_after_seconds(self) -> float | None:
        """`details.retryAfterSeconds` of the Status, when the server suggested a delay."""
        value = self.details.get("retryAfterSeconds")
        return float(value) if isinstance(value, int | float) and value > 0 else None


class BadRequest(ApiError):
    """400."""


class Unauthorized(ApiError):
    """401."""


class Forbidden(ApiError):
    """403."""


class NotFound(ApiError):
    """404."""


class MethodNotAllowed(ApiError):
    """405."""


class Conflict(ApiError):
    """409 Conflict: optimistic-concurrency failure (stale resourceVersion, precondition): re-read, retry."""


class AlreadyExists(Conflict):
    """409 AlreadyExists: create of a name that exists."""


class Expired(ApiError):
    """410 Gone / reason Expired: the requested resourceVersion was compacted away — relist."""


class Invalid(ApiError):
    """422: the object failed validation. `causes` lists the field errors."""

    @property
    def causes(self) -> list[dict[str, Any]]:
        causes = self.details.get("causes")
        return [c for c in causes if isinstance(c, dict)] if isinstance(causes, list) else []


class TooManyRequests(ApiError):
    """429: throttled by the server (API priority and fairness, or an injected fault)."""


class ServerError(ApiError):
    """5xx."""


class Timeout(ServerError):
    """504 / reason Timeout or ServerTimeout."""


_BY_REASON: dict[str, type[ApiError]] = {
    "NotFound": NotFound,
    "AlreadyExists": AlreadyExists,
    "Conflict": Conflict,
    "Expired": Expired,
    "Gone": Expired,
    "Invalid": Invalid,
    "Forbidden": Forbidden,
    "Unauthorized": Unauthorized,
    "TooManyRequests": TooManyRequests,
    "BadRequest": BadRequest,
    "MethodNotAllowed": MethodNotAllowed,
    "Timeout": Timeout,
    "ServerTimeout": Timeout,
    "InternalError": ServerError,
    "ServiceUnavailable": ServerError,
}

_BY_CODE: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    409: Conflict,
    410: Expired,
    422: Invalid,
    429: TooManyRequests,
    504: Timeout,
}


def error_from_status(status: dict[str, Any], http_status: int | None = None) -> ApiError:
    """Build the typed error for a `Status` object (an HTTP error body or a watch ERROR event)."""
    code = http_status if http_status is not None else status.get("code")
    code = code if isinstance(code, int) else 500
    reason = status.get("reason") if isinstance(status.get("reason"), str) else ""
    message = status.get("message") if isinstance(status.get("message"), str) else ""
    cls = _BY_REASON.get(str(reason)) or _BY_CODE.get(code) or (ServerError if code >= 500 else ApiError)
    return cls(code, str(reason), str(message), status)


def error_from_response(http_status: int, body: bytes) -> ApiError:
    """Build the typed error for an HTTP error response, whatever its body holds."""
    try:
        decoded = orjson.loads(body) if body else {}
    except orjson.JSONDecodeError:
        decoded = None
    if isinstance(decoded, dict) and decoded.get("kind") == "Status":
        return error_from_status(decoded, http_status)
    text = body[:500].decode("utf-8", "replace").strip()
    cls = _BY_CODE.get(http_status) or (ServerError if http_status >= 500 else ApiError)
    return cls(http_status, "", text, {})


def is_expired(error: BaseException) -> bool:
    """410 Gone / Expired, or the "too large resource version" timeout: both call for a relist at RV ""."""
    if isinstance(error, Expired):
        return True
    if isinstance(error, Timeout):
        causes = error.details.get("causes")
        if isinstance(causes, list):
            return any(isinstance(c, dict) and c.get("reason") == "ResourceVersionTooLarge" for c in causes)
        return "Too large resource version" in error.message
    return False
