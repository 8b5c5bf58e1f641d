"""Jobs made from a CronJob and read back (upstream: getJobFromTemplate2, getJobName, getRef, byJobStartTime
and the finished-status helpers in pkg/controller/cronjob/utils.go)."""

from __future__ import annotations

import copy
import datetime
from collections.abc import Iterable, Mapping
from typing import Any

from controllers.common.podutil import new_controller_ref, parse_time

Obj = dict[str, Any]

SCHEDULED_TIMESTAMP_ANNOTATION = "batch.kubernetes.io/cronjob-scheduled-timestamp"
CRONJOB_API_VERSION = "batch/v1"


def job_name(cronjob_name: str, scheduled: float) -> str:
    """`<cronjob>-<scheduled time in minutes since the epoch>`: the name is the lock that keeps one Job per
    schedule time, across restarts and stale caches."""
    return f"{cronjob_name}-{int(scheduled) // 60}"


def rfc3339(when: float, zone: datetime.tzinfo) -> str:
    """Go's time.RFC3339 layout: `Z` for a zero offset (in any zone), else the numeric offset."""
    text = datetime.datetime.fromtimestamp(int(when), zone).isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def job_from_template(cronjob: Mapping[str, Any], scheduled: float, zone: datetime.tzinfo) -> Obj:
    """The Job to create for `scheduled`: the template's labels, annotations (plus the scheduled time in the
    CronJob's zone) and spec, controlled by the CronJob."""
    template = (cronjob.get("spec") or {}).get("jobTemplate") or {}
    template_meta = template.get("metadata") or {}
    annotations = dict(template_meta.get("annotations") or {})
    annotations[SCHEDULED_TIMESTAMP_ANNOTATION] = rfc3339(scheduled, zone)
    meta: Obj = {
        "name": job_name(cronjob["metadata"]["name"], scheduled),
        "namespace": cronjob["metadata"]["namespace"],
        "annotations": annotations,
        "ownerReferences": [new_controller_ref(cronjob, CRONJOB_API_VERSION, "CronJob")],
    }
    labels = template_meta.get("labels")
    if labels:
        meta["labels"] = dict(labels)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta,
        "spec": copy.deepcopy(template.get("spec") or {}),
    }


def object_reference(job: Mapping[str, Any]) -> Obj:
    """The `status.active` entry for a Job (ref.GetReference)."""
    meta = job["metadata"]
    return {
        "kind": "Job",
        "namespace": meta.get("namespace"),
        "name": meta["name"],
        "uid": meta.get("uid"),
        "apiVersion": "batch/v1",
        "resourceVersion": meta.get("resourceVersion"),
    }


def finished_status(job: Mapping[str, Any]) -> str | None:
    """ "Complete" or "Failed" when that condition is True; None while the Job runs."""
    for cond in (job.get("status") or {}).get("conditions") or ():
        if cond.get("type") in ("Complete", "Failed") and cond.get("status") == "True":
            return str(cond["type"])
    return None


def is_succeeded(job: Mapping[str, Any]) -> bool:
    return any(
        cond.get("type") == "Complete" and cond.get("status") == "True"
        for cond in (job.get("status") or {}).get("conditions") or ()
    )


def oldest_first(jobs: Iterable[Obj]) -> list[Obj]:
    """By status.startTime, Jobs not started last, ties by name (byJobStartTime)."""

    def key(job: Obj) -> tuple[bool, float, str]:
        started = parse_time((job.get("status") or {}).get("startTime"))
        return (started is None, started or 0.0, job["metadata"]["name"])

    return sorted(jobs, key=key)


def to_delete(jobs: Iterable[Obj], limit: int) -> list[Obj]:
    """The oldest Jobs beyond `limit`."""
    ordered = oldest_first(jobs)
    return ordered[: max(len(ordered) - limit, 0)]


def rfc1123z(when: float) -> str:
    """Go's time.RFC1123Z in UTC, e.g. `Mon, 02 Jan 2006 15:04:05 +0000`."""
    return datetime.datetime.fromtimestamp(int(when), datetime.UTC).strftime("%a, %d %b %Y %H:%M:%S +0000")
