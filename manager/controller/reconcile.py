"""The reconcile contract: the key a reconcile gets, and what its outcome does with the key.

Reconcile is level-triggered and key-based (controller-runtime's reconcile.Request and Result): it gets a
namespace/name, reads the current state from the informer caches and drives the world towards the desired
state. The returned value decides what happens to the key: None or Result() → done (failures forgotten);
Result(requeue_after=s) → reconcile again in s seconds; an exception → retry after the rate limiter's
backoff; TerminalError → logged, counted, not retried.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

Obj = dict[str, Any]
_new_tuple = tuple.__new__


class Request(NamedTuple):
    """The key of one object to reconcile: namespace ("" for cluster-scoped) and name, nothing else.

    A named tuple rather than a frozen dataclass: every enqueue looks it up in the work queue's dirty set,
    and a tuple hashes and compares in C (figures: docs/design/performance.md)."""

    namespace: str
    name: str

    @property
    def key(self) -> str:
        """The cache key, `namespace/name` (or `name` when cluster-scoped)."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @classmethod
    def from_key(cls, key: str) -> Request:
        namespace, _, name = key.rpartition("/")
        return cls(namespace, name)

    @classmethod
    def for_object(cls, obj: Obj) -> Request:
        meta = obj["metadata"]
        # tuple.__new__ directly: the named tuple's own __new__ is one Python call more, per watch event.
        return _new_tuple(cls, (meta.get("namespace") or "", meta["name"]))

    def __str__(self) -> str:
        return self.key


@dataclass(frozen=True, slots=True)
class Result:
    """What to do with the key after a successful reconcile.

    `requeue_after`: reconcile the key again after this many seconds (failures are forgotten first).
    `requeue`: retry through the rate limiter, as if it had failed (controller-runtime's deprecated Requeue).
    """

    requeue_after: float | None = None
    requeue: bool = False


class TerminalError(Exception):
    """Raise from reconcile for an error retrying cannot fix: it is logged and counted, never retried."""
