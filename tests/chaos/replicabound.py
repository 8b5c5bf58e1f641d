"""How many live pods a ReplicaSet may have as of a resourceVersion of the pod stream (the chaos checker's
ReplicaSet bound, used by `invariants.py`), and the pods that wait for the ReplicaSet stream to be judged."""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]


def rv_of(obj: Obj) -> int:
    return int(obj["metadata"].get("resourceVersion") or 0)


@dataclass
class ReplicaBound:
    """How many live pods a ReplicaSet may have while the pod stream is at a resourceVersion: the most
    replicas asked by its versions up to that resourceVersion since the last one that settled (status at
    spec: the controller had seen the pods of any earlier, higher, spec go) for the pods judged, i.e. no more
    of them were created before that status than it counts (else its controller's cache lagged)."""

    versions: list[tuple[int, int, bool]] = field(default_factory=list)  # (rv, spec.replicas, settled)

    def observe(self, rs: Obj) -> None:
        spec, status = int(rs["spec"].get("replicas", 1)), rs.get("status") or {}
        settled = (
            status.get("observedGeneration", 0) >= rs["metadata"].get("generation", 0)
            and status.get("replicas") == spec
        )
        rv = rv_of(rs)
        if self.versions and rv <= self.versions[-1][0]:
            return  # a relist repeating a version already seen
        self.versions.append((rv, spec, settled))

    def at(self, pods_rv: int, created: Sequence[int]) -> int:
        """The bound for live pods as of `pods_rv` that were created at the resourceVersions `created`."""
        last = max(bisect.bisect_right(self.versions, pods_rv, key=lambda v: v[0]) - 1, 0)
        first = self._settled_for(last, [created])
        return max(spec for _, spec, _ in self.versions[first : last + 1])

    def refuted(self, index: int, created: Sequence[int]) -> bool:
        """Whether the settled status at `index` counted fewer pods than were alive then: more of the pods
        `created` (all alive later) came before it than it says."""
        rv, spec, _ = self.versions[index]
        return sum(1 for c in created if c < rv) > spec

    def _settled_for(self, last: int, created_sets: list[Sequence[int]]) -> int:
        """The latest settled version at or before `last` that no set of pods refutes (0 if none)."""
        for i in range(last, -1, -1):
            if self.versions[i][2] and not any(self.refuted(i, c) for c in created_sets):
                return i
        return 0

    def forget_before(self, pods_rv: int, created_sets: list[Sequence[int]]) -> None:
        """Drop the versions no later question (at `pods_rv` or after) can reach. A later question judges a
        subset of the live pods in `created_sets` (pods still alive, or waiting to be judged), plus pods
        created after `pods_rv`, which cannot refute a status up to it."""
        last = bisect.bisect_right(self.versions, pods_rv, key=lambda v: v[0]) - 1
        if last < 0:
            return
        del self.versions[: self._settled_for(last, created_sets)]


@dataclass
class Suspect:
    """Pods over the bound known so far, as of a resourceVersion the ReplicaSet stream had not reached."""

    owner: str
    name: str
    pods_rv: int
    live: list[str]
    seen: float
    created: tuple[int, ...] = ()  # the resourceVersions the live pods were created at (or after)
