"""Finalizer-removal expectations: UIDs of pods whose tracking finalizer this controller asked to remove and
whose removal the pod cache has not shown yet. Such pods are skipped by counting, so a pod already moved into
status.succeeded/failed is never counted again from a stale cache."""

from __future__ import annotations

import structlog

from controllers.job.spec import TRACKING_FINALIZER

log = structlog.get_logger(__name__)

# The strategic merge patch that removes only the tracking finalizer (other finalizers are untouched).
REMOVE_TRACKING_FINALIZER_PATCH = {"metadata": {"$deleteFromPrimitiveList/finalizers": [TRACKING_FINALIZER]}}


class FinalizerExpectations:
    def __init__(self) -> None:
        self._by_job: dict[str, set[str]] = {}

    def expect_removal(self, job_key: str, uids: set[str]) -> None:
        self._by_job.setdefault(job_key, set()).update(uids)

    def removal_observed(self, job_key: str, uid: str) -> None:
        uids = self._by_job.get(job_key)
        if uids is None:
            return
        uids.discard(uid)
        if not uids:
            del self._by_job[job_key]

    def expected(self, job_key: str) -> frozenset[str]:
        return frozenset(self._by_job.get(job_key, ()))

    def delete(self, job_key: str) -> None:
        self._by_job.pop(job_key, None)

    def clear(self) -> None:
        self._by_job.clear()
