"""Waiting for the Job cache to show our own status writes (upstream's StaleControllerConsistency idea).

A sync that starts before the informer has delivered the controller's previous status write would compute
from an old status and fail with a 409 Conflict (then wait a 1 s retry). Every resourceVersion a successful
write replaced is remembered; a sync that finds one of them in the cache is deferred, and the Job update
event that brings the cache up to date enqueues the key at once."""

from __future__ import annotations

from collections.abc import Callable

SAFETY_NET_DELAY = 1.0  # should the update event never come (relist), sync anyway after this long


class StaleWrites:
    def __init__(self, enqueue: Callable[[str], None], enqueue_after: Callable[[str, float], None]) -> None:
        self._superseded: dict[str, set[str]] = {}
        self._deferred: set[str] = set()
        self._enqueue = enqueue
        self._enqueue_after = enqueue_after

    def wrote(self, key: str, replaced_rv: str | None) -> None:
        """A status write of `key` succeeded, replacing the object at `replaced_rv`."""
        if replaced_rv:
            self._superseded.setdefault(key, set()).add(replaced_rv)

    def defer_if_stale(self, key: str, cached_rv: str | None) -> bool:
        """True (and the key parked until the cache catches up) when the cache predates our last write."""
        if cached_rv is None or cached_rv not in self._superseded.get(key, ()):
            return False
        self._deferred.add(key)
        self._enqueue_after(key, SAFETY_NET_DELAY)
        return True

    def observed(self, key: str, rv: str | None) -> None:
        """The cache now holds `rv` for `key`: forget what it supersedes; run a deferred sync now."""
        if rv is not None and rv in self._superseded.get(key, ()):
            return  # still an old version (e.g. a replayed event)
        self._superseded.pop(key, None)
        if key in self._deferred:
            self._deferred.discard(key)
            self._enqueue(key)

    def forget(self, key: str) -> None:
        self._superseded.pop(key, None)
        self._deferred.discard(key)
