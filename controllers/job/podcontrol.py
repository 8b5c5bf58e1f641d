"""Pod writes of the Job controller, each with the event kube-controller-manager records for it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from controllers.common.podutil import NoLabelsError, new_controller_ref, pod_from_template
from controllers.common.slowstart import gather_settled
from controllers.job import spec as js
from controllers.job.indexed.intervals import COMPLETION_INDEX_KEY, pod_generate_name
from controllers.job.policy.backoff import INDEX_FAILURE_COUNT_KEY, INDEX_IGNORED_FAILURE_COUNT_KEY
from controllers.job.tracking.finalizers import REMOVE_TRACKING_FINALIZER_PATCH
from manager import PODS, ApiClient, ApiError, EventRecorder, NotFound

Obj = dict[str, Any]
COMPLETION_INDEX_ENV = "JOB_COMPLETION_INDEX"
_REMOVE_FINALIZER_BODY = orjson.dumps(REMOVE_TRACKING_FINALIZER_PATCH)
_STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"


def error_text(exc: BaseException) -> str:
    """The API server's message (what a Go StatusError prints), else the exception text."""
    if isinstance(exc, ApiError) and exc.message:
        return exc.message
    return str(exc)


def is_namespace_terminating(exc: BaseException) -> bool:
    """A create refused because the namespace is being deleted: nothing to do and no event (upstream
    controller_utils.go checks v1.NamespaceTerminatingCause)."""
    return isinstance(exc, ApiError) and exc.has_cause("NamespaceTerminating")


def _add_index_env(containers: list[Obj]) -> None:
    for container in containers:
        env = container.setdefault("env", [])
        if any(v.get("name") == COMPLETION_INDEX_ENV for v in env):
            continue
        env.append(
            {
                "name": COMPLETION_INDEX_ENV,
                "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{COMPLETION_INDEX_KEY}']"}},
            }
        )


def build_pod(job: Mapping[str, Any], index: int | None, failure_counts: tuple[int, int] | None) -> Obj:
    """The pod for `job` (and completion `index` when Indexed): template copy, controller ref, tracking
    finalizer; Indexed pods also get the index annotation+label, hostname, JOB_COMPLETION_INDEX env, and with
    backoffLimitPerIndex the failure-count annotations."""
    meta = job["metadata"]
    ref = new_controller_ref(job, "batch/v1", "Job")
    pod = pod_from_template(
        js.spec(job).get("template") or {}, meta["name"], ref, extra_finalizers=(js.TRACKING_FINALIZER,)
    )
    pod["metadata"]["namespace"] = meta.get("namespace")
    if index is None:
        return pod
    pmeta = pod["metadata"]
    pmeta["generateName"] = pod_generate_name(meta["name"], index)
    annotations = pmeta.setdefault("annotations", {})
    annotations[COMPLETION_INDEX_KEY] = str(index)
    pmeta["labels"][COMPLETION_INDEX_KEY] = str(index)
    if failure_counts is not None:
        annotations[INDEX_FAILURE_COUNT_KEY] = str(failure_counts[0])
        if failure_counts[1] > 0:
            annotations[INDEX_IGNORED_FAILURE_COUNT_KEY] = str(failure_counts[1])
    pod_spec = pod["spec"]
    pod_spec["hostname"] = f"{meta['name']}-{index}"
    _add_index_env(pod_spec.get("initContainers") or [])
    _add_index_env(pod_spec.get("containers") or [])
    return pod


class PodControl:
    def __init__(self, client: ApiClient, recorder: EventRecorder) -> None:
        self.client = client
        self.recorder = recorder

    async def create(self, job: Obj, pod: Obj) -> Obj:
        """Create the pod; records SuccessfulCreate or FailedCreate (not for a terminating namespace).
        Returns the created pod's PartialObjectMetadata: only its (generated) name is read, and the rest of
        the pod is not worth decoding (the informer brings it)."""
        try:
            created = await self.client.create(
                PODS, pod, pod["metadata"].get("namespace"), strip_managed_fields=True, metadata_only=True
            )
        except Exception as exc:
            if not is_namespace_terminating(exc):
                self.recorder.event(job, "Warning", "FailedCreate", f"Error creating: {error_text(exc)}")
            raise
        self.recorder.event(job, "Normal", "SuccessfulCreate", f"Created pod: {created['metadata']['name']}")
        return created

    async def delete(self, job: Obj, pod: Mapping[str, Any]) -> None:
        """Delete the pod; NotFound is raised silently, other errors after a FailedDelete event."""
        meta = pod["metadata"]
        try:
            await self.client.delete(PODS, meta["name"], meta.get("namespace"))
        except NotFound:
            raise
        except Exception as exc:
            self.recorder.event(job, "Warning", "FailedDelete", f"Error deleting: {error_text(exc)}")
            raise
        self.recorder.event(job, "Normal", "SuccessfulDelete", f"Deleted pod: {meta['name']}")

    async def remove_tracking_finalizer(self, pod: Mapping[str, Any]) -> None:
        """Strategic-merge-patch the tracking finalizer away. The answer (the whole pod) is never read, so
        it is not decoded: the raw request, with the same write gate, rate limiter, retries and errors."""
        meta = pod["metadata"]
        await self.client.request_raw(
            "PATCH",
            PODS.api_path(meta.get("namespace"), meta["name"]),
            body=_REMOVE_FINALIZER_BODY,
            content_type=_STRATEGIC_MERGE_PATCH,
        )

    async def remove_finalizers(
        self, pods: Sequence[Mapping[str, Any]]
    ) -> tuple[list[bool], BaseException | None]:
        """Remove the tracking finalizer from every pod (concurrently). Returns per-pod success (a pod already
        gone counts as done) and the first error."""

        if len(pods) == 1:
            # One pod (a one-pod Job's every finish): awaited in place, without the per-pod wrapper.
            try:
                await self.remove_tracking_finalizer(pods[0])
            except NotFound:
                pass
            except Exception as exc:
                return [False], exc
            return [True], None

        async def one(pod: Mapping[str, Any]) -> bool:
            try:
                await self.remove_tracking_finalizer(pod)
            except NotFound:
                return True
            return True

        results = await gather_settled([one(p) for p in pods])
        errors = [r for r in results if isinstance(r, BaseException)]
        for err in errors:
            if not isinstance(err, Exception):
                raise err
        return [r is True for r in results], (errors[0] if errors else None)


__all__ = ["NoLabelsError", "PodControl", "build_pod"]
