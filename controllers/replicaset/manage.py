"""manageReplicas (pkg/controller/replicaset/replica_set.go): create missing pods in slow-start batches, or
delete the surplus in ranking order, with expectations recorded before each write and events for each
outcome."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from prometheus_client import Histogram

from controllers.common.podutil import (
    Obj,
    Selector,
    labels_of,
    meta,
    new_controller_ref,
    pod_from_template,
)
from controllers.common.ranking import (
    RankingCache,
    deletion_age_ratios,
    rank_by_related_pods_on_same_node,
    sort_active_pods_with_ranks,
)
from controllers.common.slowstart import slow_start_batch
from controllers.replicaset.status import desired_replicas, error_message
from manager import CONTROLLER_UID_INDEX, PODS, REPLICASETS, ApiError, NotFound, controller_owner

if TYPE_CHECKING:
    from controllers.replicaset.controller import ReplicaSetController

BURST_REPLICAS = 500

SORTING_DELETION_AGE_RATIO = Histogram(
    "replicaset_controller_sorting_deletion_age_ratio",
    "Age of each ready pod chosen for deletion divided by the age of the youngest ready pod, when a "
    "ReplicaSet scales down; below 2 means the logarithmic ranking deleted young pods.",
    buckets=(0.25, 0.5, 1.0, 2.0, 4.0, 8.0),
)


class DeletePodError(Exception):
    def __init__(self, cause: BaseException) -> None:
        super().__init__(f"unable to delete pods: {error_message(cause)}")


def _namespace_terminating(exc: BaseException) -> bool:
    return isinstance(exc, ApiError) and exc.has_cause("NamespaceTerminating")


async def manage_replicas(ctl: ReplicaSetController, pods: list[Obj], rs: Obj, key: str) -> None:
    """Create up to BURST_REPLICAS missing pods, or delete up to BURST_REPLICAS surplus ones."""
    diff = len(pods) - desired_replicas(rs)
    if diff < 0:
        await create_pods(ctl, rs, key, min(-diff, BURST_REPLICAS))
    elif diff > 0:
        await delete_pods(ctl, rs, key, pods, min(diff, BURST_REPLICAS))


async def create_pods(ctl: ReplicaSetController, rs: Obj, key: str, count: int) -> None:
    namespace = str(meta(rs).get("namespace"))
    ref = new_controller_ref(rs, REPLICASETS.api_version, REPLICASETS.kind)
    template = (rs.get("spec") or {}).get("template") or {}
    # One body for every create: the server names each pod from generateName.
    body = pod_from_template(template, str(meta(rs)["name"]), ref)
    ctl.expectations.expect_creations(key, count)
    ctl.log.debug("too few replicas", replicaset=key, need=desired_replicas(rs), creating=count)

    async def create_one() -> None:
        try:
            created = await ctl.client.create(PODS, body, namespace)
        except ApiError as exc:
            if _namespace_terminating(exc):
                return  # every create would fail the same way; nothing to report
            ctl.recorder.event(rs, "Warning", "FailedCreate", f"Error creating: {error_message(exc)}")
            raise
        ctl.recorder.event(rs, "Normal", "SuccessfulCreate", f"Created pod: {meta(created).get('name')}")

    result = await slow_start_batch(count, create_one)
    for _ in range(result.skipped):
        # Pods never created (or refused) will never be observed.
        ctl.expectations.creation_observed(key)
    if result.error is not None:
        ctl.log.info("slow-start failure, pods skipped", replicaset=key, skipped=result.skipped)
        raise result.error


async def delete_pods(ctl: ReplicaSetController, rs: Obj, key: str, pods: list[Obj], count: int) -> None:
    victims = pods_to_delete(ctl, rs, pods, count, ctl.pod_facts.ranking(key))
    namespace = str(meta(rs).get("namespace"))
    pod_keys = [f"{namespace}/{meta(p).get('name')}" for p in victims]
    ctl.expectations.expect_deletions(key, pod_keys)

    async def delete_one(name: str, pod_key: str) -> None:
        try:
            await ctl.client.delete(PODS, name, namespace)
        except NotFound:
            ctl.expectations.deletion_observed(key, pod_key)
            return
        except ApiError as exc:
            ctl.expectations.deletion_observed(key, pod_key)
            ctl.recorder.event(rs, "Warning", "FailedDelete", f"Error deleting: {error_message(exc)}")
            raise DeletePodError(exc) from exc
        ctl.recorder.event(rs, "Normal", "SuccessfulDelete", f"Deleted pod: {name}")

    results = await asyncio.gather(
        *(delete_one(str(meta(p).get("name")), k) for p, k in zip(victims, pod_keys, strict=True)),
        return_exceptions=True,
    )
    for outcome in results:
        if isinstance(outcome, BaseException):
            raise outcome  # the first failure; the others were recorded as events


def pods_to_delete(
    ctl: ReplicaSetController, rs: Obj, pods: list[Obj], count: int, cache: RankingCache | None = None
) -> list[Obj]:
    if count >= len(pods):
        return pods[:count]  # deleting all of them: no ranking needed
    related = indirectly_related_pods(ctl, rs)
    now = ctl.now()
    ranks = rank_by_related_pods_on_same_node(pods, related)
    ranked = sort_active_pods_with_ranks(pods, ranks, now, cache)
    for ratio in deletion_age_ratios(ranked, count, now, cache):
        SORTING_DELETION_AGE_RATIO.observe(ratio)
    return ranked[:count]


def indirectly_related_pods(ctl: ReplicaSetController, rs: Mapping[str, Any]) -> list[Obj]:
    """Pods selected by any ReplicaSet with the same controller owner (e.g. every ReplicaSet of one
    Deployment); none when the ReplicaSet has no controller."""
    ref = controller_owner(rs)
    if ref is None:
        return []
    seen: set[str] = set()
    related: list[Obj] = []
    for other in ctl.replicasets.indexer.by_index(CONTROLLER_UID_INDEX, str(ref.get("uid", ""))):
        selector = ctl.selector_of(other)
        if selector is None:
            continue
        for pod in _pods_in(ctl, str(meta(other).get("namespace")), selector):
            uid = str(meta(pod).get("uid"))
            if uid not in seen:
                seen.add(uid)
                related.append(pod)
    return related


def _pods_in(ctl: ReplicaSetController, namespace: str, selector: Selector) -> Iterable[Obj]:
    return (p for p in ctl.pods.indexer.by_namespace(namespace) if selector.matches(labels_of(p)))
