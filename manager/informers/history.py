"""A server that started a new history: its resourceVersions went backwards (an API server restored from an
etcd backup, or kubesim restarted with an empty store on the same address).

ResourceVersions are opaque to clients, but an API server's come from etcd's revision, which only grows:
a list or a bookmark below what the reflector already synced means the cache describes a history the server
no longer has. Watching on from the old resourceVersion would stall silently (the server waits for a
revision it may not reach for a long time), so the reflector relists with a consistent read and replaces
the whole cache (vanished objects deleted, new ones added), says so loudly, and then tells the informer's
history listeners (the controllers: what they expected to see of their own writes may never come, so they
forget their expectations and sync every object again).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import structlog

from manager.apimachinery.objects import BadObjectError, Obj, object_key

log = structlog.get_logger(__name__)


class NewHistory(Exception):
    """The server answered a resourceVersion lower than the last synced one: relist from scratch."""

    def __init__(self, resource: str, last: str, current: str) -> None:
        super().__init__(f"{resource}: resourceVersion went backwards from {last} to {current}")
        self.last = last
        self.current = current


def _as_int(rv: object) -> int | None:
    try:
        return int(str(rv))
    except ValueError:
        return None


def went_backwards(last: str, current: object) -> bool:
    """True when both are integers (as every API server's are) and `current` is below `last`."""
    old, new = _as_int(last), _as_int(current)
    return old is not None and new is not None and new < old


def replaced_identity(items: list[Obj], cached: Callable[[str], Obj | None]) -> tuple[str, str, str] | None:
    """The first listed object whose key the cache holds with another UID at a higher resourceVersion
    (key, cached RV, listed RV): a recreated object always gets a higher RV, unless history restarted."""
    for item in items:
        try:
            key = object_key(item)
        except (BadObjectError, KeyError, TypeError):
            continue  # reported by the sink
        old = cached(key)
        if old is None:
            continue
        meta: dict[str, Any] = item["metadata"]
        old_meta: dict[str, Any] = old.get("metadata") or {}
        uid, old_uid = meta.get("uid"), old_meta.get("uid")
        old_rv, rv = str(old_meta.get("resourceVersion", "")), meta.get("resourceVersion")
        if uid and old_uid and uid != old_uid and went_backwards(old_rv, rv):
            return key, old_rv, str(rv)
    return None


def report(resource: str, last: str, current: str, seen_in: str) -> None:
    log.error(
        "resourceVersion went backwards: the API server has a new history; relisting and replacing the cache",
        resource=resource,
        last_synced_resource_version=last,
        server_resource_version=current,
        seen_in=seen_in,
    )


def check_list(
    resource: str, last: str, list_rv: str, items: list[Obj], cached: Callable[[str], Obj | None]
) -> bool:
    """Log the new history a complete list shows (its RV below ours, or a known key's identity replaced)
    and return whether it shows one."""
    if went_backwards(last, list_rv):
        report(resource, last, list_rv, "list")
        return True
    if (replaced := replaced_identity(items, cached)) is not None:
        report(resource, replaced[1], replaced[2], f"list: {replaced[0]} has another uid")
        return True
    return False
