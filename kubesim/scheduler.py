"""The simulated scheduler: binds pending pods to the least-loaded node, breaking ties round-robin.

It only decides; the kubelet module performs the binding write (spec.nodeName plus the PodScheduled
condition), so both share one store subscription and one event-processing loop.
"""

from __future__ import annotations

from collections.abc import Iterable


class Scheduler:
    """Tracks how many live pods each node runs; `pick` returns the node for the next pod."""

    def __init__(self, nodes: Iterable[str]) -> None:
        self._load: dict[str, int] = dict.fromkeys(nodes, 0)
        self._order = list(self._load)
        self._cursor = 0
        self._placed: dict[str, str] = {}  # pod uid -> node

    @property
    def nodes(self) -> list[str]:
        return list(self._order)

    def has_node(self, name: str) -> bool:
        return name in self._load

    def load(self, node: str) -> int:
        return self._load.get(node, 0)

    def pick(self) -> str | None:
        """The least-loaded node; among equals the next one after the previous pick. None with no nodes."""
        if not self._order:
            return None
        count = len(self._order)
        best: str | None = None
        best_index = 0
        for step in range(count):
            index = (self._cursor + step) % count
            node = self._order[index]
            if best is None or self._load[node] < self._load[best]:
                best, best_index = node, index
        self._cursor = (best_index + 1) % count
        return best

    def place(self, uid: str, node: str) -> None:
        """Count a pod on `node` (a bind we made, or a pod found already bound)."""
        if uid in self._placed or node not in self._load:
            return
        self._placed[uid] = node
        self._load[node] += 1

    def release(self, uid: str) -> None:
        """The pod no longer occupies its node (finished or removed)."""
        node = self._placed.pop(uid, None)
        if node is not None:
            self._load[node] -= 1
