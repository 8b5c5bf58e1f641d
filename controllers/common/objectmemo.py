"""Facts derived from informer-cache objects, remembered per object between syncs.

The informer cache replaces an object's dict whenever the object changes and hands out the same dict
otherwise, so whatever is derived from a dict stays valid while the cache keeps handing it out. A controller
that looks at thousands of pods on every sync (a ReplicaSet while it scales) then recomputes only the pods
that changed since its previous sync.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class ObjectMemo(Generic[T]):
    """`derive(objs, compute)`: `compute(obj)` for each object, reusing the previous call's results for the
    very same dicts; only the objects of the latest call are kept."""

    def __init__(self) -> None:
        self._known: dict[int, tuple[Any, T]] = {}

    def derive(self, objs: Iterable[Any], compute: Callable[[Any], T]) -> list[T]:
        known = self._known
        current: dict[int, tuple[Any, T]] = {}
        result: list[T] = []
        for obj in objs:
            entry = known.get(id(obj))
            if entry is None or entry[0] is not obj:  # `is`: an id may be reused by a newer dict
                entry = (obj, compute(obj))
            current[id(obj)] = entry
            result.append(entry[1])
        self._known = current
        return result
