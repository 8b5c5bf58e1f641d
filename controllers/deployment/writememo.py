"""Our own writes, standing in for cached objects until the informer cache has caught up with them.

The Deployment controller has no expectations: a sync that runs before the cache holds its previous writes
would read a stale ReplicaSet or Deployment, fail on its resourceVersion, or (a ReplicaSet it has just
created) try to create it again. A written object is used instead of the cached one while the cache holds
an older resourceVersion; ReplicaSets created but not cached yet are listed with the owner's. Any change by
someone else after our write has a higher resourceVersion, so the cache then wins.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from controllers.common.podutil import Obj, meta
from manager import controller_owner

PENDING_CREATE_TTL = 30.0  # a created object the cache never shows (deleted at once) is forgotten


def _rv(obj: Obj) -> int | None:
    try:
        return int(meta(obj).get("resourceVersion") or "")
    except ValueError:
        return None  # opaque: only our own answers can be compared by identity


class WriteMemo:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._written: dict[str, tuple[Obj, float]] = {}  # uid → (latest answer to our write, when)
        self._clock = clock

    def written(self, obj: Obj) -> None:
        now = self._clock()
        if len(self._written) > 64:  # entries of objects deleted since (their owner gone too) expire here
            for uid, (_, when) in list(self._written.items()):
                if now - when > PENDING_CREATE_TTL:
                    del self._written[uid]
        self._written[str(meta(obj).get("uid") or "")] = (obj, now)

    def fresh(self, cached: Obj) -> Obj:
        """The freshest known version of a cached object."""
        uid = str(meta(cached).get("uid") or "")
        entry = self._written.get(uid)
        if entry is None:
            return cached
        mine, cached_rv = _rv(entry[0]), _rv(cached)
        if mine is not None and cached_rv is not None and cached_rv < mine:
            return entry[0]
        del self._written[uid]
        return cached

    def pending(self, owner_uid: str, cached_uids: set[str]) -> list[Obj]:
        """Objects we wrote for this owner that the cache does not hold yet (just created)."""
        now = self._clock()
        found = []
        for uid, (obj, when) in list(self._written.items()):
            if uid in cached_uids:
                continue
            ref = controller_owner(obj)
            if ref is None or ref.get("uid") != owner_uid:
                continue
            if now - when > PENDING_CREATE_TTL:
                del self._written[uid]
                continue
            found.append(obj)
        return found

    def forget(self, uid: str) -> None:
        self._written.pop(uid, None)

    def clear(self) -> None:
        """Forget every write (a new history of the server: its resourceVersions no longer compare)."""
        self._written.clear()

    def __len__(self) -> int:
        return len(self._written)
