"""A Job as upstream's Go types serialise it: empty optional status fields are left out (omitempty).

kube-apiserver decodes every write into those types, so `active: 0` or an empty `uncountedTerminatedPods`
list never reads back from a real cluster; a finished Job shows `uncountedTerminatedPods: {}` and no
`active`. kubesim stores what it is sent, so the controller sends what the real server would keep.
`ready` and `terminating` are pointers upstream: their zeros stay.
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]
_OMITTED_WHEN_EMPTY = ("active", "succeeded", "failed", "completedIndexes", "conditions")


def as_serialised(job: Obj) -> Obj:
    """`job` with the empty omitempty status fields left out; `job` itself is not changed (returned as is
    when there is nothing to leave out)."""
    status = job.get("status")
    if not isinstance(status, dict):
        return job
    uncounted = status.get("uncountedTerminatedPods")
    trimmed = None
    if isinstance(uncounted, dict) and not all(uncounted.values()):
        trimmed = {name: uids for name, uids in uncounted.items() if uids}
    empty = [name for name in _OMITTED_WHEN_EMPTY if name in status and not status[name]]
    if not empty and trimmed is None:
        return job
    sent = {name: value for name, value in status.items() if name not in empty}
    if trimmed is not None:
        sent["uncountedTerminatedPods"] = trimmed
    return {**job, "status": sent}
