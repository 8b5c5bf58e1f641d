"""What Go's JSON encoding does to zero values, which a v1.32 apiserver shows and kubesim must too.

The apiserver decodes every write into the Go types and encodes them again, so `omitempty` fields with
zero values never read back, while zero structs read back as null or {}. Called from `admission` (every
object's metadata) and `defaults` (per resource)."""

from __future__ import annotations

from typing import Any

JSON = dict[str, Any]


# ObjectMeta collections that Go serialises with omitempty: an empty one never reads back (a patch that
# removes the last finalizer leaves no `finalizers: []`).
META_COLLECTIONS_OMITEMPTY = ("finalizers", "labels", "annotations", "ownerReferences")


def omit_empty_meta_collections(obj: JSON) -> None:
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        for name in META_COLLECTIONS_OMITEMPTY:
            if name in meta and meta[name] in ([], {}):
                del meta[name]


def null_creation_timestamp(template: JSON) -> None:
    """A template's ObjectMeta is a struct in Go, and its zero creationTimestamp serialises as null: v1.32
    servers print `metadata: {creationTimestamp: null}` in every pod and job template."""
    meta = template.get("metadata")
    if meta is None:
        template["metadata"] = {"creationTimestamp": None}
    elif isinstance(meta, dict):
        meta.setdefault("creationTimestamp", None)


# JobStatus fields with omitempty: the apiserver decodes every write into the Go types, so `active: 0` or an
# empty `uncountedTerminatedPods` list never reads back (a finished Job shows `uncountedTerminatedPods: {}`).
# `ready` and `terminating` are pointers: their zeros stay.
JOB_STATUS_OMITEMPTY = ("active", "succeeded", "failed", "completedIndexes", "conditions")


def omit_empty_job_status(obj: JSON) -> None:
    status = obj.get("status")
    if not isinstance(status, dict):
        return
    for name in JOB_STATUS_OMITEMPTY:
        if name in status and not status[name]:
            del status[name]
    uncounted = status.get("uncountedTerminatedPods")
    if isinstance(uncounted, dict):
        for name in [name for name, uids in uncounted.items() if not uids]:
            del uncounted[name]


def core_event(obj: JSON) -> None:
    """core/v1 Event fields that Go always serialises: zero times as null (structs), the two reporting
    strings as "" (no omitempty), the source as {}."""
    for name in ("eventTime", "firstTimestamp", "lastTimestamp"):
        obj.setdefault(name, None)
    obj.setdefault("reportingComponent", "")
    obj.setdefault("reportingInstance", "")
    obj.setdefault("source", {})
