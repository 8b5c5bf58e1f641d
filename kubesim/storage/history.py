"""The bounded per-resource event history behind watch resumption and exact (MVCC) lists.

Each retained event keeps only the serialised bytes of its object (shared with the stored entry and with the
next event's "old" side, never copied) and rebuilds `WatchEvent`s when a watch resumes or a list reads the
past: the decoded dicts and wire lines of the live event are left to the garbage collector."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator

from kubesim.status import errors
from kubesim.storage.records import Entry, WatchEvent


class Retained:
    """One event as the history keeps it: its type and revision, the bytes after and (unless ADDED) before."""

    __slots__ = ("data", "old_data", "old_rv", "rv", "type")

    def __init__(self, type: str, rv: int, data: bytes, old_rv: int, old_data: bytes | None) -> None:
        self.type = type
        self.rv = rv
        self.data = data
        self.old_rv = old_rv
        self.old_data = old_data

    @classmethod
    def of(cls, event: WatchEvent) -> Retained:
        old = event.old
        if old is None:
            return cls(event.type, event.entry.rv, event.entry.data, 0, None)
        return cls(event.type, event.entry.rv, event.entry.data, old.rv, old.data)

    def event(self, resource: str) -> WatchEvent:
        old = None if self.old_data is None else Entry(None, self.old_data, self.old_rv)
        return WatchEvent(self.type, resource, Entry(None, self.data, self.rv), old)


class History:
    def __init__(self, size: int) -> None:
        self.size = max(1, size)
        self._events: dict[str, deque[Retained]] = {}
        self._floor: dict[str, int] = {}
        self._global_floor = 0

    def record(self, event: WatchEvent) -> None:
        events = self._events.get(event.resource)
        if events is None:
            events = self._events[event.resource] = deque()
        if len(events) >= self.size:
            self._floor[event.resource] = events.popleft().rv
        events.append(Retained.of(event))

    def floor(self, resource: str) -> int:
        """Events with a revision greater than this are still in history."""
        return max(self._floor.get(resource, 0), self._global_floor)

    @property
    def global_floor(self) -> int:
        return self._global_floor

    def since(self, resource: str, rv: int) -> list[WatchEvent]:
        """Events strictly after `rv`, oldest first; 410 Expired when some of them were forgotten."""
        floor = self.floor(resource)
        if rv < floor:
            raise errors.too_old(rv, floor + 1)
        newer: list[Retained] = []
        for retained in reversed(self._events.get(resource) or ()):
            if retained.rv <= rv:
                break
            newer.append(retained)
        return [retained.event(resource) for retained in reversed(newer)]

    def compact(self, rv: int) -> None:
        self._global_floor = rv
        for events in self._events.values():
            events.clear()

    def retained(self, resource: str) -> Iterator[Retained]:
        """The kept events of one resource, oldest first (what a durable store saves)."""
        return iter(self._events.get(resource) or ())

    def restore(self, resource: str, floor: int, events: Iterable[Retained]) -> None:
        """Put back a resource's history as saved: `events` oldest first, all newer than `floor`."""
        kept = deque(events)
        while len(kept) > self.size:
            floor = kept.popleft().rv
        self._events[resource] = kept
        if floor:
            self._floor[resource] = floor

    def restore_global_floor(self, rv: int) -> None:
        self._global_floor = rv
