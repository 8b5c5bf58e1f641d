"""The bounded per-resource event history behind watch resumption and exact (MVCC) lists."""

from __future__ import annotations

from collections import deque

from kubesim.status import errors
from kubesim.storage.records import WatchEvent


class History:
    def __init__(self, size: int) -> None:
        self.size = max(1, size)
        self._events: dict[str, deque[WatchEvent]] = {}
        self._floor: dict[str, int] = {}
        self._global_floor = 0

    def record(self, event: WatchEvent) -> None:
        events = self._events.get(event.resource)
        if events is None:
            events = self._events[event.resource] = deque()
        if len(events) >= self.size:
            self._floor[event.resource] = events.popleft().rv
        events.append(event)

    def floor(self, resource: str) -> int:
        """Events with a revision greater than this are still in history."""
        return max(self._floor.get(resource, 0), self._global_floor)

    def since(self, resource: str, rv: int) -> list[WatchEvent]:
        """Events strictly after `rv`, oldest first; 410 Expired when some of them were forgotten."""
        floor = self.floor(resource)
        if rv < floor:
            raise errors.too_old(rv, floor + 1)
        newer: list[WatchEvent] = []
        for event in reversed(self._events.get(resource) or ()):
            if event.rv <= rv:
                break
            newer.append(event)
        newer.reverse()
        return newer

    def compact(self, rv: int) -> None:
        self._global_floor = rv
        for events in self._events.values():
            events.clear()
