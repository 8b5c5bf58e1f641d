"""The Job controller (`job-controller`, alias `job`): kube-controller-manager's semantics for batch/v1 Jobs.

Two queues as upstream: `job` (Job keys; `--concurrent-job-syncs` workers) and `job_orphan_pod` (pods whose
tracking finalizer nobody else will remove; one worker). Both retry with a per-item 1 s → 60 s backoff.
Tunables are class attributes so tests and benchmarks can subclass instead of patching.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from functools import cached_property
from typing import Any, ClassVar

import orjson
from pydantic import Field

from controllers.common.claims import ControllerRefManager
from controllers.common.podutil import (
    Selector,
    ensure_indexer,
    labels_of,
)
from controllers.job import spec as js
from controllers.job.conditions import is_job_finished
from controllers.job.handlers import JobEventHandler, PodEventHandler, selector_matches
from controllers.job.podcontrol import PodControl
from controllers.job.policy.backoff import DEFAULT_POD_FAILURE_BACKOFF, MAX_POD_FAILURE_BACKOFF, BackoffStore
from controllers.job.sync import sync_job
from controllers.job.tracking.counting import has_tracking_finalizer
from controllers.job.tracking.finalizers import FinalizerExpectations
from controllers.job.tracking.staleness import StaleWrites
from manager import (
    CONTROLLER_UID_INDEX,
    JOBS,
    PODS,
    Controller,
    ControllerContext,
    ControllerExpectations,
    ControllerFlags,
    ItemExponentialFailureRateLimiter,
    Lister,
    NotFound,
    PolicyRule,
    RateLimiter,
    RateLimitingQueue,
    Request,
    Result,
    SecondaryQueue,
    WatchesWith,
    controller_owner,
    controller_uid_index,
    orphan_index_key,
)

Obj = dict[str, Any]
JOB_API_BACKOFF = 1.0
MAX_JOB_API_BACKOFF = 60.0
_new_tuple = tuple.__new__


def _request(key: str) -> Request:
    """`Request.from_key(key)` without the named tuple's Python-level `__new__` (once per watch event)."""
    namespace, _, name = key.rpartition("/")
    request: Request = _new_tuple(Request, (namespace, name))
    return request


def job_rate_limiter() -> RateLimiter[Any]:
    return ItemExponentialFailureRateLimiter(JOB_API_BACKOFF, MAX_JOB_API_BACKOFF)


class JobFlags(ControllerFlags):
    """job-controller's flags: kube-controller-manager's JobControllerOptions and the managedBy value."""

    concurrent_job_syncs: int = Field(
        5, gt=0, description="Jobs synced concurrently (workers of job-controller)."
    )
    job_controller_managed_by: str = Field(
        js.DEFAULT_MANAGED_BY,
        min_length=1,
        description="job-controller reconciles Jobs whose spec.managedBy is unset or equals this value.",
    )


class JobController(Controller):
    name = "job-controller"
    aliases = ("job",)
    enabled_by_default = True
    flags = JobFlags
    concurrency = "concurrent_job_syncs"
    queue_name = "job"
    rate_limiter = staticmethod(job_rate_limiter)
    # Each verb is a call it makes (the event sender's rules are the manager's, not repeated here).
    rbac = (
        PolicyRule(("batch",), ("jobs",), ("get", "list", "watch")),
        PolicyRule(("batch",), ("jobs/status",), ("update",)),
        PolicyRule(
            ("batch",), ("jobs/finalizers",), ("update",)
        ),  # blockOwnerDeletion on the Pods it creates
        PolicyRule(
            ("",), ("pods",), ("list", "watch", "create", "delete", "patch")
        ),  # patch: adopt, finalizers
    )
    # The handlers only read caches, settle expectations and enqueue: inline.
    watches = (
        WatchesWith(JOBS, JobEventHandler, inline=True),
        WatchesWith(PODS, PodEventHandler, inline=True),
    )

    # Tunables (upstream values); tests subclass to shorten them.
    sync_batch_period: ClassVar[float] = 1.0
    # How late a batched sync may go to share a wake-up with others, as a fraction of the period.
    sync_batch_slack: ClassVar[float] = 0.1
    pod_failure_backoff: ClassVar[float] = DEFAULT_POD_FAILURE_BACKOFF
    max_pod_failure_backoff: ClassVar[float] = MAX_POD_FAILURE_BACKOFF

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.managed_by = JobFlags.of(ctx.settings).job_controller_managed_by
        self.now: Callable[[], float] = time.time
        self.expectations = ControllerExpectations()
        self.finalizer_expectations = FinalizerExpectations()
        self.backoff = BackoffStore(
            clock=lambda: self.now(), base=self.pod_failure_backoff, cap=self.max_pod_failure_backoff
        )
        self.orphan_queue: RateLimitingQueue[str] = RateLimitingQueue(
            "job_orphan_pod", rate_limiter=job_rate_limiter()
        )
        self._secondary = (SecondaryQueue(self.orphan_queue, self.handle_orphan_pod, workers=1),)
        self.stale_writes = StaleWrites(self.enqueue_key, self.enqueue_key_after)

    # ------------------------------------------------------------------ caches and clients
    @cached_property
    def jobs(self) -> Lister:
        return self.lister(JOBS)

    @cached_property
    def pods(self) -> Lister:
        return self.lister(PODS)

    @cached_property
    def pod_control(self) -> PodControl:
        return PodControl(self.client, self.recorder)

    def on_new_history(self) -> None:
        # Pods we expected to see created, deleted or released may never show up in the new history.
        self.expectations.clear()
        self.finalizer_expectations.clear()
        super().on_new_history()

    def setup(self) -> None:
        super().setup()
        ensure_indexer(self.informer(PODS).indexer, CONTROLLER_UID_INDEX, controller_uid_index)

    # ------------------------------------------------------------------ queueing
    def enqueue_key(self, key: str) -> None:
        self.queue.add(_request(key))

    def enqueue_key_after(self, key: str, delay: float) -> None:
        self.queue.add_after(Request.from_key(key), max(delay, 0.0))

    def enqueue_key_batched(self, key: str) -> None:
        """Sync `key` once the batch period has passed. The sync may wait up to a tenth of the period longer
        when other Jobs are due within that window, so that Jobs whose batches end close together sync in
        one wake-up (a stream of Jobs then costs the loop about the wake-ups of Jobs created at once:
        benchmarks/job_throughput.py many-streamed); a Job alone in its window syncs on time."""
        period = self.sync_batch_period
        self.queue.add_after(_request(key), period, slack=period * self.sync_batch_slack)

    def enqueue_key_with_delay(self, key: str, delay: float) -> None:
        self.enqueue_key_after(key, max(delay, self.sync_batch_period))

    def enqueue_orphan(self, pod: Obj) -> None:
        meta = pod["metadata"]
        self.orphan_queue.add(f"{meta.get('namespace', '')}/{meta['name']}")

    def cleanup_pod_finalizers(self, job: Obj) -> None:
        job_uid = job["metadata"].get("uid")
        for pod in self.pods.by_index(CONTROLLER_UID_INDEX, str(job_uid)):
            if has_tracking_finalizer(pod):
                self.enqueue_orphan(pod)

    # ------------------------------------------------------------------ lookups
    def resolve_controller_ref(self, namespace: str, ref: Any) -> Obj | None:
        if ref.get("kind") != "Job" or str(ref.get("apiVersion", "")).rpartition("/")[0] != "batch":
            return None
        job: Obj | None = self.jobs.get(namespace, ref.get("name"))
        if job is None or job["metadata"].get("uid") != ref.get("uid"):
            return None
        return job

    def jobs_selecting(self, pod: Obj) -> list[Obj]:
        """Jobs in the pod's namespace whose selector matches it (adoption candidates)."""
        if not labels_of(pod):
            return []
        namespace = pod["metadata"].get("namespace", "")
        return [job for job in self.jobs.by_namespace(namespace) if selector_matches(job, pod)]

    async def pods_for_job(self, job: Obj) -> list[Obj]:
        """The Job's pods: owned ones (released if the selector no longer matches) plus matching orphans
        (adopted, with the tracking finalizer)."""
        meta = job["metadata"]
        namespace, job_uid = meta.get("namespace", ""), str(meta.get("uid"))
        owned_pods = self.pods.by_index(CONTROLLER_UID_INDEX, job_uid)
        orphans = self.pods.by_index(CONTROLLER_UID_INDEX, orphan_index_key(namespace))
        selector = Selector.from_label_selector(js.spec(job).get("selector"))
        if not orphans and "uid" in meta and _all_claimed(owned_pods, job_uid, selector):
            return owned_pods  # what the claim pass below returns for them, without its coroutines
        candidates = [*owned_pods, *orphans]

        async def patch_pod(ns: str, name: str, body: Obj) -> object:
            return await self.client.patch(PODS, name, body, ns, patch_type="strategic")

        async def recheck() -> Obj:
            return await self.client.get(JOBS, meta["name"], namespace)

        claimer = ControllerRefManager(
            owner=job,
            api_version="batch/v1",
            kind="Job",
            selector=selector,
            patch_pod=patch_pod,
            recheck_owner=recheck,
            finalizers=(js.TRACKING_FINALIZER,),
        )
        pods: list[Obj] = await claimer.claim_pods(candidates)
        for i, pod in enumerate(pods):
            owned = any(r.get("uid") == job_uid for r in pod["metadata"].get("ownerReferences") or ())
            if not owned and not has_tracking_finalizer(pod):
                # Just adopted: the patch added the finalizer; count as if the cache showed it.
                finalizers = [*(pod["metadata"].get("finalizers") or ()), js.TRACKING_FINALIZER]
                pods[i] = {**pod, "metadata": {**pod["metadata"], "finalizers": finalizers}}
        return pods

    async def update_status(self, job: Obj) -> Obj:
        """PUT the status; returns `job` with the server's new metadata. Only the metadata is asked back
        (PartialObjectMetadata): the stored spec is the one sent (the write succeeds only at the sent
        resourceVersion, and a status PUT never changes the spec), and the stored status is the one sent up
        to Go's omission of zero values, which every reader here treats as zero (`get(...) or 0`) as
        upstream's typed structs do. The next write of the same sync needs the new resourceVersion."""
        # The cached Job has no managedFields either (the informer drops them); a PUT without them keeps the
        # server's, so the answer need not carry them into the next write.
        answer = await self.client.update_status(JOBS, job, strip_managed_fields=True, metadata_only=True)
        meta = job["metadata"]
        self.stale_writes.wrote(f"{meta.get('namespace', '')}/{meta['name']}", meta.get("resourceVersion"))
        return {**job, "metadata": answer["metadata"]}

    async def write_status(self, job: Obj) -> None:
        """`update_status` for a sync's last write when no event follows it: its answer would be read by
        no one, so it is not decoded at all (the raw request: same write gate, retries and typed errors)."""
        meta = job["metadata"]
        path = JOBS.api_path(meta.get("namespace"), meta["name"], "status")
        await self.client.request_raw("PUT", path, body=orjson.dumps(job))
        self.stale_writes.wrote(f"{meta.get('namespace', '')}/{meta['name']}", meta.get("resourceVersion"))

    # ------------------------------------------------------------------ reconcile and workers
    async def reconcile(self, request: Request) -> Result | None:
        await sync_job(self, request.key)
        return None

    def secondary_queues(self) -> tuple[SecondaryQueue[str], ...]:
        return self._secondary

    async def handle_orphan_pod(self, key: str) -> None:
        pod: Obj | None = self.pods.get_by_key(key)
        if pod is None or not has_tracking_finalizer(pod):
            return
        ref = controller_owner(pod)
        if ref is not None:
            if ref.get("kind") != "Job" or ref.get("apiVersion") != "batch/v1":
                return  # someone else's pod: not ours to touch
            job = self.resolve_controller_ref(pod["metadata"].get("namespace", ""), ref)
            if job is not None and js.external_manager(job, self.managed_by) is not None:
                return  # the other controller's business
            if job is not None and not is_job_finished(job):
                return  # adopted (or still owned by a live Job): its sync handles the finalizer
        with contextlib.suppress(NotFound):
            await self.pod_control.remove_tracking_finalizer(pod)


def _all_claimed(pods: list[Obj], job_uid: str, selector: Selector) -> bool:
    """Every pod controlled by the Job `job_uid` and matched by its selector: the claim pass
    (ControllerRefManager.claim_pods) would keep each of them as is, patching nothing."""
    for pod in pods:
        ref = controller_owner(pod)
        if ref is None or ref.get("uid") != job_uid or not selector.matches(labels_of(pod)):
            return False
    return True
