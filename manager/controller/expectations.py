"""Expectations: remember the creates and deletes a controller issued until its cache has seen them.

Informer caches lag the controller's own writes. A sync that runs between "POST pod" and "the pod is in the
cache" would count too few pods and create duplicates. So before issuing N creates the controller records
`expect_creations(key, N)` (or `expect_deletions(key, pod_keys)` before deletes); its informer handlers call
`creation_observed` / `deletion_observed`; and a sync only acts when `satisfied(key)`. Expectations older than
`timeout` (5 minutes, kube-controller-manager's ExpectationsTimeout) count as satisfied, so a lost event
cannot wedge a controller forever. Deletions can be tracked per pod key (the UID-tracking variant the
ReplicaSet controller uses), so each pod it asked to delete is counted once, whatever events arrive.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import structlog

EXPECTATIONS_TIMEOUT = 300.0

log = structlog.get_logger(__name__)


@dataclass
class Expectation:
    adds: int
    deletes: int
    timestamp: float
    deleting_keys: set[str] = field(default_factory=set)
    tracks_keys: bool = False

    def fulfilled(self) -> bool:
        return self.adds <= 0 and self.deletes <= 0


class ControllerExpectations:
    """Per controller-key counters of pending creates and deletes, with an injectable monotonic clock."""

    def __init__(self, *, timeout: float = EXPECTATIONS_TIMEOUT, clock: Callable[[], float] = time.monotonic):
        self.timeout = timeout
        self._clock = clock
        self._store: dict[str, Expectation] = {}

    def get(self, key: str) -> Expectation | None:
        return self._store.get(key)

    def satisfied(self, key: str) -> bool:
        """True when nothing is pending for `key`, its expectations expired, or none were ever set."""
        exp = self._store.get(key)
        if exp is None:
            return True
        if exp.fulfilled():
            return True
        if self._clock() - exp.timestamp > self.timeout:
            log.info("expectations expired", key=key, adds=exp.adds, deletes=exp.deletes)
            return True
        return False

    def set_expectations(self, key: str, adds: int, deletes: int) -> None:
        self._store[key] = Expectation(adds, deletes, self._clock())

    def expect_creations(self, key: str, adds: int) -> None:
        self.set_expectations(key, adds, 0)

    def expect_deletions(self, key: str, deletes: int | Iterable[str]) -> None:
        """Expect `deletes` deletions: a count, or the keys (`namespace/name`) of the objects to be deleted,
        so that only deletions of exactly those objects are counted, each once."""
        if isinstance(deletes, int):
            self.set_expectations(key, 0, deletes)
            return
        keys = set(deletes)
        self._store[key] = Expectation(0, len(keys), self._clock(), keys, tracks_keys=True)

    def lower(self, key: str, adds: int, deletes: int) -> None:
        if (exp := self._store.get(key)) is not None:
            exp.adds -= adds
            exp.deletes -= deletes

    def raise_expectations(self, key: str, adds: int, deletes: int) -> None:
        if (exp := self._store.get(key)) is not None:
            exp.adds += adds
            exp.deletes += deletes

    def creation_observed(self, key: str) -> None:
        self.lower(key, 1, 0)

    def deletion_observed(self, key: str, deleted_key: str | None = None) -> None:
        """One deletion seen. With tracked keys, only a tracked `deleted_key` counts (and only once)."""
        exp = self._store.get(key)
        if exp is None:
            return
        if exp.tracks_keys:
            if deleted_key is None or deleted_key not in exp.deleting_keys:
                return
            exp.deleting_keys.discard(deleted_key)
        exp.deletes -= 1

    def delete(self, key: str) -> None:
        """Forget everything about `key` (its owner was deleted; a re-created one starts clean)."""
        self._store.pop(key, None)

    def clear(self) -> None:
        """Forget every expectation (the API server started a new history: what was expected may never be
        observed, and every owner is synced again from the new state)."""
        self._store.clear()

    def __len__(self) -> int:
        return len(self._store)
