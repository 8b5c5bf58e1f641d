"""Pure pod logic of the simulated kubelet: what the annotations ask for, and the status a pod shows.

Nothing here touches the store or the clock: every function takes plain dicts and timestamps. The status
builders edit and return the status of the pod they are given, which must be the caller's private copy.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

ANNOTATION_PREFIX = "kubesim.aiokcm.io/"
RUN_SECONDS = ANNOTATION_PREFIX + "run-seconds"
EXIT_CODE = ANNOTATION_PREFIX + "exit-code"
EXIT_CODES_BY_INDEX = ANNOTATION_PREFIX + "exit-codes-by-index"
FAIL_ATTEMPTS = ANNOTATION_PREFIX + "fail-attempts"
READY_AFTER_SECONDS = ANNOTATION_PREFIX + "ready-after-seconds"
UNSCHEDULABLE = ANNOTATION_PREFIX + "unschedulable"
TERMINATE_SECONDS = ANNOTATION_PREFIX + "terminate-seconds"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"

DEFAULT_FINITE_RUN_SECONDS = 0.5
DEFAULT_TERMINATE_SECONDS = 0.2
# What a container killed during graceful deletion reports (SIGKILL after the grace period).
KILLED_EXIT_CODE = 137

Obj = dict[str, Any]


def _number(value: str | None, default: float | None) -> float | None:
    if value is None:
        return default
    try:
        parsed = float(value)
    except ValueError:
        return default
    return parsed if parsed >= 0 else default


def _integer(value: str | None, default: int) -> int:
    if value is None:
        return default
    try:
        return int(value.strip())
    except ValueError:
        return default


def parse_exit_codes_by_index(value: str | None) -> dict[int, int]:
    """`"1:42,3:7"` → {1: 42, 3: 7}; malformed entries are skipped rather than failing the pod."""
    codes: dict[int, int] = {}
    for entry in (value or "").split(","):
        index, sep, code = entry.partition(":")
        if not sep:
            continue
        try:
            codes[int(index.strip())] = int(code.strip())
        except ValueError:
            continue
    return codes


def owner_uid(pod: Obj) -> str | None:
    """The controller owner's uid (or the first owner's, when none is marked controller)."""
    refs = pod.get("metadata", {}).get("ownerReferences") or []
    for ref in refs:
        if ref.get("controller"):
            return str(ref.get("uid"))
    return str(refs[0].get("uid")) if refs else None


@dataclass(frozen=True)
class PodBehaviour:
    """What the kubesim annotations on one pod ask the simulated kubelet to do."""

    run_seconds: float | None
    exit_code: int = 0
    exit_codes_by_index: dict[int, int] = field(default_factory=dict)
    fail_attempts: int = 0
    ready_after_seconds: float = 0.0
    unschedulable: bool = False
    terminate_seconds: float = DEFAULT_TERMINATE_SECONDS
    restart_policy: str = "Always"
    completion_index: int | None = None
    attempt_key: tuple[str, int | None] = ("", None)

    @classmethod
    def of(cls, pod: Obj) -> PodBehaviour:
        meta = pod.get("metadata", {})
        annotations: dict[str, str] = meta.get("annotations") or {}
        labels: dict[str, str] = meta.get("labels") or {}
        restart_policy = str(pod.get("spec", {}).get("restartPolicy") or "Always")
        default_run = None if restart_policy == "Always" else DEFAULT_FINITE_RUN_SECONDS
        raw_index = annotations.get(COMPLETION_INDEX, labels.get(COMPLETION_INDEX))
        index = _integer(raw_index, -1) if raw_index is not None else None
        completion_index = index if index is not None and index >= 0 else None
        # Attempts are counted per owner (and completion index); a bare pod counts its own restarts.
        attempts_owner = owner_uid(pod) or str(meta.get("uid", ""))
        return cls(
            run_seconds=_number(annotations.get(RUN_SECONDS), default_run),
            exit_code=_integer(annotations.get(EXIT_CODE), 0),
            exit_codes_by_index=parse_exit_codes_by_index(annotations.get(EXIT_CODES_BY_INDEX)),
            fail_attempts=max(0, _integer(annotations.get(FAIL_ATTEMPTS), 0)),
            ready_after_seconds=_number(annotations.get(READY_AFTER_SECONDS), 0.0) or 0.0,
            unschedulable=annotations.get(UNSCHEDULABLE, "").strip().lower() == "true",
            terminate_seconds=_number(annotations.get(TERMINATE_SECONDS), DEFAULT_TERMINATE_SECONDS) or 0.0,
            restart_policy=restart_policy,
            completion_index=completion_index,
            attempt_key=(attempts_owner, completion_index),
        )

    def exit_code_for_attempt(self, attempt: int) -> int:
        """Exit code of the main container on its `attempt`-th finish (0-based) for this owner and index."""
        code = self.exit_code
        if self.completion_index is not None:
            code = self.exit_codes_by_index.get(self.completion_index, code)
        if self.fail_attempts > 0:
            if attempt < self.fail_attempts:
                return code if code != 0 else 1
            return 0
        return code

    def restarts_after(self, exit_code: int) -> bool:
        """Whether the container is restarted in place after exiting with `exit_code`."""
        return self.restart_policy == "Always" or (self.restart_policy == "OnFailure" and exit_code != 0)


class AttemptLedger:
    """Counts finished attempts per (owner uid, completion index), for `fail-attempts`."""

    def __init__(self) -> None:
        self._finished: dict[tuple[str, int | None], int] = {}

    def next_attempt(self, key: tuple[str, int | None]) -> int:
        """Record one more finished attempt and return its 0-based number."""
        attempt = self._finished.get(key, 0)
        self._finished[key] = attempt + 1
        return attempt

    def count_restored(self, pod: Obj) -> None:
        """Count the attempts a pod restored from a data directory already finished: its main container's
        restarts in place, and its own end (unless it was killed rather than exited)."""
        status = pod.get("status") or {}
        statuses = status.get("containerStatuses") or [{}]
        finished = int(statuses[0].get("restartCount", 0) or 0)
        if status.get("phase") in ("Succeeded", "Failed") and status.get("reason") != "DeadlineExceeded":
            finished += 0 if (pod.get("metadata") or {}).get("deletionTimestamp") else 1
        if finished:
            key = PodBehaviour.of(pod).attempt_key
            self._finished[key] = self._finished.get(key, 0) + finished

    def forget_owner(self, owner: str) -> None:
        for key in [k for k in self._finished if k[0] == owner]:
            del self._finished[key]


def _digest(*parts: object) -> str:
    return hashlib.sha256("/".join(str(p) for p in parts).encode()).hexdigest()


def image_id(image: str) -> str:
    name = image if "/" in image else f"docker.io/library/{image}"
    repo = name.split("@")[0].rsplit(":", 1)[0] if ":" in name.rsplit("/", 1)[-1] else name.split("@")[0]
    return f"{repo}@sha256:{_digest('image', image)}"


def container_id(pod_uid: str, container: str, restart: int) -> str:
    return f"containerd://{_digest(pod_uid, container, restart)}"


def _condition(
    kind: str, status: bool, now: str, reason: str | None = None, message: str | None = None
) -> Obj:
    cond: Obj = {
        "type": kind,
        "status": "True" if status else "False",
        "lastProbeTime": None,
        "lastTransitionTime": now,
    }
    if reason:
        cond["reason"] = reason
    if message:
        cond["message"] = message
    return cond


# The order a real kubelet reports pod conditions in.
_CONDITION_ORDER = {
    kind: i
    for i, kind in enumerate(
        ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")
    )
}


def _order_conditions(status: Obj) -> None:
    status["conditions"].sort(key=lambda c: _CONDITION_ORDER.get(c.get("type"), len(_CONDITION_ORDER)))


def set_condition(status: Obj, cond: Obj) -> None:
    """Replace the condition of the same type; keep its lastTransitionTime when the status is unchanged."""
    conditions: list[Obj] = status.setdefault("conditions", [])
    for i, old in enumerate(conditions):
        if old.get("type") == cond["type"]:
            if old.get("status") == cond["status"]:
                since = old.get("lastTransitionTime", cond["lastTransitionTime"])
                cond = {**cond, "lastTransitionTime": since}
            conditions[i] = cond
            return
    conditions.append(cond)


def _status_of(pod: Obj) -> Obj:
    """The status dict of `pod` (created when missing); the builders edit it in place."""
    status: Obj = pod.setdefault("status", {})
    if status is None:
        status = pod["status"] = {}
    return status


def unschedulable_status(pod: Obj, now: str, message: str) -> Obj:
    status = _status_of(pod)
    status["phase"] = "Pending"
    set_condition(status, _condition("PodScheduled", False, now, "Unschedulable", message))
    return status


def scheduled_status(pod: Obj, now: str) -> Obj:
    status = _status_of(pod)
    status.setdefault("phase", "Pending")
    set_condition(status, _condition("PodScheduled", True, now))
    return status


def _containers(pod: Obj, key: str = "containers") -> list[Obj]:
    return list(pod.get("spec", {}).get(key) or [])


def _first_status(uid: str, container: Obj, *, ready: bool, started: bool, state: Obj) -> Obj:
    """A container's status in its first attempt (restartCount 0, no lastState)."""
    return {
        "name": container["name"],
        "image": container.get("image", ""),
        "imageID": image_id(container.get("image", "")),
        "containerID": container_id(uid, container["name"], 0),
        "ready": ready,
        "started": started,
        "restartCount": 0,
        "state": state,
        "lastState": {},
    }


def running_status(pod: Obj, host_ip: str, pod_ip: str, now: str, ready: bool) -> Obj:
    """Status right after the kubelet started every container of a bound pod."""
    uid = pod["metadata"].get("uid", "")
    status = _status_of(pod)
    status.update(
        phase="Running",
        hostIP=host_ip,
        hostIPs=[{"ip": host_ip}],
        podIP=pod_ip,
        podIPs=[{"ip": pod_ip}],
        startTime=status.get("startTime") or now,
    )
    status.setdefault("qosClass", "BestEffort")
    init = _containers(pod, "initContainers")
    if init:
        status["initContainerStatuses"] = [
            _first_status(
                uid,
                c,
                ready=True,
                started=False,
                state={
                    "terminated": {
                        "exitCode": 0,
                        "reason": "Completed",
                        "startedAt": now,
                        "finishedAt": now,
                        "containerID": container_id(uid, c["name"], 0),
                    }
                },
            )
            for c in init
        ]
    status["containerStatuses"] = [
        _first_status(uid, c, ready=ready, started=True, state={"running": {"startedAt": now}})
        for c in _containers(pod)
    ]
    set_condition(status, _condition("PodReadyToStartContainers", True, now))
    set_condition(status, _condition("Initialized", True, now))
    set_condition(status, _condition("PodScheduled", True, now))
    set_readiness(status, ready, now)
    _order_conditions(status)
    return status


def set_readiness(status: Obj, ready: bool, now: str) -> None:
    names = [cs["name"] for cs in status.get("containerStatuses", [])]
    for cs in status.get("containerStatuses", []):
        cs["ready"] = ready
    reason = None if ready else "ContainersNotReady"
    message = None if ready else f"containers with unready status: [{' '.join(names)}]"
    set_condition(status, _condition("ContainersReady", ready, now, reason, message))
    set_condition(status, _condition("Ready", ready, now, reason, message))


def _terminated(exit_code: int, started_at: str, now: str, cid: str) -> Obj:
    reason = "Completed" if exit_code == 0 else "Error"
    return {
        "exitCode": exit_code,
        "reason": reason,
        "startedAt": started_at,
        "finishedAt": now,
        "containerID": cid,
    }


def _started_at(cs: Obj, fallback: str) -> str:
    return str(cs.get("state", {}).get("running", {}).get("startedAt") or fallback)


def restarted_status(pod: Obj, exit_code: int, now: str, ready: bool) -> Obj:
    """The main container exited and is restarted in place: restartCount grows, lastState keeps the exit."""
    uid = pod["metadata"].get("uid", "")
    status = _status_of(pod)
    statuses: list[Obj] = status.get("containerStatuses") or []
    for i, cs in enumerate(statuses):
        if i != 0:
            continue
        restarts = int(cs.get("restartCount", 0)) + 1
        old_id = str(cs.get("containerID", ""))
        cs["lastState"] = {"terminated": _terminated(exit_code, _started_at(cs, now), now, old_id)}
        cs["restartCount"] = restarts
        cs["containerID"] = container_id(uid, cs["name"], restarts)
        cs["state"] = {"running": {"startedAt": now}}
    set_readiness(status, ready, now)
    return status


def finished_status(pod: Obj, exit_code: int, now: str) -> Obj:
    """Every container terminated (the main one with `exit_code`, the others with 0): the pod is terminal."""
    status = _status_of(pod)
    statuses: list[Obj] = status.get("containerStatuses") or []
    for i, cs in enumerate(statuses):
        code = exit_code if i == 0 else 0
        cid = str(cs.get("containerID", ""))
        cs["state"] = {"terminated": _terminated(code, _started_at(cs, now), now, cid)}
        cs["ready"] = False
        cs["started"] = False
    phase = "Succeeded" if exit_code == 0 else "Failed"
    status["phase"] = phase
    reason = "PodCompleted" if phase == "Succeeded" else "PodFailed"
    for kind in ("ContainersReady", "Ready"):
        set_condition(status, _condition(kind, False, now, reason))
    set_condition(status, _condition("PodReadyToStartContainers", False, now))
    return status


def killed_status(pod: Obj, now: str) -> Obj:
    """A pod deleted while running: its containers are killed and it turns Failed before it is removed."""
    if pod.get("status", {}).get("phase") in ("Succeeded", "Failed"):
        return _status_of(pod)
    if not pod.get("status", {}).get("containerStatuses"):
        status = _status_of(pod)
        status["phase"] = "Failed"
        return status
    return finished_status(pod, KILLED_EXIT_CODE, now)
