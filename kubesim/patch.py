"""PATCH bodies: JSON patch, merge patch and strategic merge patch (stub: filled in next commit)."""

from __future__ import annotations

from typing import Any

JSON = dict[str, Any]
GVK = tuple[str, str, str]


class PatchError(Exception):
    """A patch that cannot be applied; maps onto a Status (code, reason, message, optional details)."""

    def __init__(self, code: int, reason: str, message: str, details: JSON | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self) -> JSON:
        body: JSON = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                      "message": self.message, "reason": self.reason}
        if self.details is not None:
            body["details"] = self.details
        body["code"] = self.code
        return body


def apply_patch(current: JSON, body: bytes, content_type: str, gvk: GVK) -> JSON:
    """Return the patched copy of `current`; raise PatchError on failure."""
    raise PatchError(415, "UnsupportedMediaType", "not implemented yet")
