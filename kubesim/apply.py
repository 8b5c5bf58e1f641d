"""Server-side apply and managedFields (stub: filled in next commit)."""

from __future__ import annotations

import copy
from typing import Any

JSON = dict[str, Any]
GVK = tuple[str, str, str]


class ApplyConflict(Exception):
    """409 Conflict of an apply; `.status` is the Status body to send."""

    def __init__(self, status: JSON) -> None:
        super().__init__(status.get("message", ""))
        self.status = status
        self.code = 409


def server_side_apply(live: JSON | None, applied: JSON, manager: str, force: bool, gvk: GVK,
                      subresource: str | None = None) -> JSON:
    """Merge `applied` into `live` (None: create) owned by `manager`; return the new object."""
    merged = copy.deepcopy(live) if live is not None else {}
    merged.update(copy.deepcopy(applied))
    return merged


def record_update(old: JSON | None, new: JSON, manager: str, gvk: GVK,
                  subresource: str | None = None) -> None:
    """Update `new.metadata.managedFields` in place for a non-apply write by `manager`."""
    return None
