"""API errors: every failure leaves kubesim as a `Status` object with the reason, message and code a real
kube-apiserver would use (apimachinery's errors.go shapes)."""

from __future__ import annotations

from typing import Any

from kubesim.status.body import status_body

JSON = dict[str, Any]


class ApiError(Exception):
    """An error that maps one-to-one onto a `Status` response."""

    def __init__(self, code: int, reason: str, message: str, details: JSON | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers: dict[str, str] = {}
        self.list_meta: JSON = {}  # the Status's own ListMeta (a fresh continue token on an expired one)

    def status(self) -> JSON:
        return status_body(
            "Failure",
            message=self.message,
            reason=self.reason,
            details=self.details,
            code=self.code,
            metadata=self.list_meta,
        )


def _details(name: str, group: str, kind: str, **extra: Any) -> JSON:
    details: JSON = {"name": name}
    if group:
        details["group"] = group
    details["kind"] = kind
    details.update(extra)
    return details


def qualified(resource: str, group: str) -> str:
    """`pods` or `deployments.apps`: how messages name a resource."""
    return f"{resource}.{group}" if group else resource


def not_found(resource: str, group: str, name: str) -> ApiError:
    return ApiError(
        404, "NotFound", f'{qualified(resource, group)} "{name}" not found', _details(name, group, resource)
    )


def resource_not_found() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def already_exists(resource: str, group: str, name: str) -> ApiError:
    return ApiError(
        409,
        "AlreadyExists",
        f'{qualified(resource, group)} "{name}" already exists',
        _details(name, group, resource),
    )


def conflict(resource: str, group: str, name: str, why: str) -> ApiError:
    message = f'Operation cannot be fulfilled on {qualified(resource, group)} "{name}": {why}'
    return ApiError(409, "Conflict", message, _details(name, group, resource))


OPTIMISTIC_LOCK = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


def optimistic_lock(resource: str, group: str, name: str) -> ApiError:
    return conflict(resource, group, name, OPTIMISTIC_LOCK)


def invalid(kind: str, group: str, name: str, causes: list[JSON]) -> ApiError:
    """422 Invalid: `<Kind>[.<group>] "<name>" is invalid: field: message[, ...]`, one cause per error."""
    parts = []
    for cause in causes:
        field = cause.get("field", "")
        parts.append(f"{field}: {cause.get('message', '')}" if field else str(cause.get("message", "")))
    summary = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    return ApiError(
        422,
        "Invalid",
        f'{qualified(kind, group)} "{name}" is invalid: {summary}',
        _details(name, group, kind, causes=causes),
    )


def invalid_field(kind: str, group: str, name: str, field: str, reason: str, message: str) -> ApiError:
    return invalid(kind, group, name, [{"reason": reason, "message": message, "field": field}])


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def forbidden(resource: str, group: str, name: str, why: str) -> ApiError:
    message = f'{qualified(resource, group)} "{name}" is forbidden: {why}'
    return ApiError(403, "Forbidden", message, _details(name, group, resource))


def expired(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def too_old(requested: int, oldest: int) -> ApiError:
    return expired(f"too old resource version: {requested} ({oldest})")


NOT_ALLOWED = "the server does not allow this method on the requested resource"


def method_not_allowed(message: str = NOT_ALLOWED) -> ApiError:
    return ApiError(405, "MethodNotAllowed", message)


def unsupported_media_type(content_type: str) -> ApiError:
    return ApiError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - "
        f'accepted media types include: application/json, application/yaml; got "{content_type}"',
    )


def not_acceptable() -> ApiError:
    return ApiError(
        406,
        "NotAcceptable",
        "only the following media types are accepted: application/json, "
        "application/yaml, application/json;as=Table;v=v1;g=meta.k8s.io",
    )


def too_large(limit: int) -> ApiError:
    return ApiError(413, "RequestEntityTooLarge", f"Request entity too large: limit is {limit}")


def timeout(message: str) -> ApiError:
    return ApiError(504, "Timeout", message)


def internal(message: str) -> ApiError:
    return ApiError(500, "InternalError", f"Internal error occurred: {message}")


def list_options_invalid(causes: list[JSON]) -> ApiError:
    return invalid("ListOptions", "meta.k8s.io", "", causes)
