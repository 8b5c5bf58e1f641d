"""What one sync needs to know about each pod, remembered per pod object between syncs (ObjectMemo): a
ReplicaSet with thousands of pods is synced after every pod event while it scales, and each sync then
recomputes only the pods that changed since the previous sync of the same ReplicaSet.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from controllers.common.objectmemo import ObjectMemo
from controllers.common.podutil import Obj, Selector, is_ready, ready_since
from controllers.common.ranking import RankingCache


class PodFacts(NamedTuple):
    pod: Obj
    active: bool  # not Succeeded/Failed, not being deleted
    controller_uid: str | None
    matches: bool  # the ReplicaSet's selector matches the pod's labels
    fully_labeled: bool  # the pod's labels include all the template's labels
    ready: bool
    ready_since: float | None


def _facts(pod: Obj, selector: Selector, template_labels: Selector) -> PodFacts:
    metadata = pod.get("metadata") or {}
    labels = metadata.get("labels") or {}
    phase = (pod.get("status") or {}).get("phase")
    controller_uid = None
    for ref in metadata.get("ownerReferences") or ():
        if ref.get("controller") is True:
            controller_uid = ref.get("uid")
            break
    ready = is_ready(pod)
    return PodFacts(
        pod=pod,
        active=phase not in ("Succeeded", "Failed") and not metadata.get("deletionTimestamp"),
        controller_uid=controller_uid,
        matches=selector.matches(labels),
        fully_labeled=template_labels.matches(labels),
        ready=ready,
        ready_since=ready_since(pod) if ready else None,
    )


class PodFactsCache:
    """Facts per ReplicaSet key; a new selector or new template labels start that key afresh."""

    def __init__(self) -> None:
        self._by_key: dict[str, tuple[Any, ObjectMemo[PodFacts]]] = {}
        self._ranking: dict[str, RankingCache] = {}

    def ranking(self, key: str) -> RankingCache:
        """The deletion-ranking facts of this ReplicaSet's pods (kept per pod dict the same way)."""
        cache = self._ranking.get(key)
        if cache is None:
            cache = self._ranking[key] = RankingCache()
        return cache

    def facts(
        self, key: str, rs: Mapping[str, Any], selector: Selector, pods: Iterable[Obj]
    ) -> list[PodFacts]:
        spec = rs.get("spec") or {}
        labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        signature = ((rs.get("metadata") or {}).get("uid"), id(selector), tuple(sorted(labels.items())))
        previous = self._by_key.get(key)
        if previous is not None and previous[0] == signature:
            memo = previous[1]
        else:
            memo = ObjectMemo()
            self._by_key[key] = (signature, memo)
        template_labels = Selector.from_set(labels)
        return memo.derive(pods, lambda pod: _facts(pod, selector, template_labels))

    def forget(self, key: str) -> None:
        self._by_key.pop(key, None)
        self._ranking.pop(key, None)


def count_replicas(facts: Iterable[PodFacts], min_ready_seconds: int, now: float) -> tuple[int, int, int]:
    """(fullyLabeledReplicas, readyReplicas, availableReplicas) of the claimed active pods."""
    fully = ready = available = 0
    for f in facts:
        if f.fully_labeled:
            fully += 1
        if f.ready:
            ready += 1
            since = f.ready_since
            if min_ready_seconds == 0 or (since is not None and since + min_ready_seconds < now):
                available += 1
    return fully, ready, available
