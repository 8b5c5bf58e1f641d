"""The simulated scheduler and kubelet: pods get bound, run, turn Ready, finish, restart and are removed.

`Kubelet(store, nodes, seed, clock)` registers `nodes` Ready Node objects on `start()`, then follows every
pod write through one store subscription. Work is level-triggered: an event or a due timer marks the pod's
key dirty, and one task reconciles dirty keys against the stored object, writing through the store exactly
like an API client would (new resourceVersion, watch events). Time only advances through timers
(`clock.call_later`), so thousands of waiting pods cost nothing. Behaviour per pod comes from the
kubesim.aiokcm.io annotations (see kubesim.kubelet.pods).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubesim.kubelet.clock import Clock, Timer, as_clock
from kubesim.kubelet.nodes import host_ip, node_name, node_object, pod_ip, pod_ip_serial
from kubesim.kubelet.pods import (
    KILLED_EXIT_CODE,
    UNSCHEDULABLE,
    AttemptLedger,
    PodBehaviour,
    finished_status,
    killed_status,
    restarted_status,
    running_status,
    scheduled_status,
    set_readiness,
    unschedulable_status,
)
from kubesim.kubelet.scheduler import Scheduler, unfit_reason, unschedulable_message
from kubesim.status.errors import ApiError
from kubesim.storage.store import Store, WatchEvent, format_time

log = logging.getLogger(__name__)

Key = tuple[str, str]
Obj = dict[str, Any]
TERMINAL = ("Succeeded", "Failed")
BATCH = 200  # keys reconciled between two yields to the loop, so the API stays responsive under bursts


@dataclass(slots=True, eq=False)
class _PodState:
    """What the kubelet remembers about one pod (one uid) between events."""

    uid: str
    behaviour: PodBehaviour
    started: bool = False
    ready_due: bool = False
    finish_due: bool = False
    deadline_due: bool = False
    terminating: bool = False
    terminate_due: bool = False
    killed: bool = False
    removed: bool = False
    timers: list[Timer] = field(default_factory=list)

    def cancel_timers(self) -> None:
        for timer in self.timers:
            timer.cancel()
        self.timers.clear()


class Kubelet:
    def __init__(
        self,
        store: Store,
        nodes: int = 3,
        seed: int | None = None,
        clock: Callable[[], float] | Clock | None = None,
    ) -> None:
        self.store = store
        self.node_count = max(0, nodes)
        self.clock = as_clock(clock)
        self._rng = random.Random(seed)
        self.scheduler = Scheduler(node_name(i) for i in range(1, self.node_count + 1))
        self._node_index = {node_name(i): i for i in range(1, self.node_count + 1)}
        self._ip_serial = dict.fromkeys(self._node_index, 0)
        self._ledger = AttemptLedger()
        self._states: dict[Key, _PodState] = {}
        self._dirty: dict[Key, None] = {}
        self._wakeup = asyncio.Event()
        # What we are writing right now, so that only our own write's event is skipped (another subscriber
        # may write from its callback while ours is delivered, and those events must not be lost).
        self._own_write: Obj | None = None
        self._own_delete: Key | None = None
        self._task: asyncio.Task[None] | None = None
        self._subscriptions: list[Any] = []
        self._waiting: set[Key] = set()  # pods no node fits right now: retried when a node changes

    # -- lifecycle -------------------------------------------------------------------------------------------
    async def start(self) -> None:
        now = self._now()
        for name, index in self._node_index.items():
            if self.store.entry("nodes", "", name) is None:
                self.store.create("nodes", node_object(index, now, self._rng))
        self._subscriptions = [
            self.store.subscribe("pods", self._on_event),
            self.store.subscribe("nodes", self._on_node_event),
        ]
        for entry in self.store.entries("pods"):
            self._mark((entry.namespace, entry.name))
            self._take_over(entry.obj)
        self._task = asyncio.create_task(self._run(), name="kubesim-kubelet")

    def _take_over(self, pod: Obj) -> None:
        """A pod already stored at start (restored from a data directory): new pod IPs are numbered after
        its IP, and its finished attempts count for `fail-attempts`."""
        self._ledger.count_restored(pod)
        node = pod.get("spec", {}).get("nodeName")
        if node in self._ip_serial:
            serial = pod_ip_serial(str(pod.get("status", {}).get("podIP", "")))
            self._ip_serial[node] = max(self._ip_serial[node], serial)

    async def stop(self) -> None:
        for subscription in self._subscriptions:
            subscription.close()
        self._subscriptions.clear()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        for state in self._states.values():
            state.cancel_timers()
        self._states.clear()

    # -- event intake ----------------------------------------------------------------------------------------
    def _on_event(self, event: WatchEvent) -> None:
        key = (event.entry.namespace, event.entry.name)
        if event.entry.obj is self._own_write or key == self._own_delete:
            return  # our own write: the reconcile that made it carries on by itself
        self._mark(key)

    def _on_node_event(self, event: WatchEvent) -> None:
        for key in self._waiting:
            self._mark(key)

    def _mark(self, key: Key) -> None:
        self._dirty[key] = None
        self._wakeup.set()

    def _due(self, key: Key, uid: str, what: str) -> None:
        state = self._states.get(key)
        if state is None or state.uid != uid:
            return
        setattr(state, f"{what}_due", True)
        self._mark(key)

    def _after(self, key: Key, state: _PodState, delay: float, what: str) -> None:
        uid = state.uid
        state.timers.append(self.clock.call_later(delay, lambda: self._due(key, uid, what)))

    async def _run(self) -> None:
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            done = 0
            while self._dirty:
                key = next(iter(self._dirty))
                del self._dirty[key]
                try:
                    self._sync(key)
                except Exception:  # one odd pod must never stop the kubelet
                    log.exception("kubelet failed to sync pod %s/%s", *key)
                done += 1
                if done % BATCH == 0:
                    await asyncio.sleep(0)

    # -- reconcile -------------------------------------------------------------------------------------------
    def _now(self) -> str:
        return format_time(self.clock())

    def _sync(self, key: Key) -> None:
        for _ in range(8):  # each step makes at most one write; a pod needs a few in a row at most
            entry = self.store.entry("pods", *key)
            if entry is None:
                self._forget(key)
                return
            if not self._step(key, entry.obj):
                return

    def _forget(self, key: Key) -> None:
        self._waiting.discard(key)
        state = self._states.pop(key, None)
        if state is not None:
            state.cancel_timers()
            self.scheduler.release(state.uid)

    def _state_for(self, key: Key, pod: Obj) -> _PodState:
        uid = str(pod["metadata"].get("uid", ""))
        state = self._states.get(key)
        if state is None or state.uid != uid:
            self._forget(key)
            state = self._states[key] = _PodState(uid, PodBehaviour.of(pod))
        return state

    def _step(self, key: Key, pod: Obj) -> bool:
        """Make the next write this pod needs; False when it needs none right now."""
        state = self._state_for(key, pod)
        if state.removed:
            return False
        status = pod.get("status") or {}
        node = pod.get("spec", {}).get("nodeName")
        if pod["metadata"].get("deletionTimestamp"):
            return self._terminate(key, state, pod)
        if status.get("phase") in TERMINAL:
            state.cancel_timers()
            self.scheduler.release(state.uid)
            return False
        if not node:
            return self._schedule(key, state, pod)
        self._waiting.discard(key)
        if not self.scheduler.has_node(node):
            return False  # bound to a node no kubelet of ours runs: stays Pending, as on a real cluster
        self.scheduler.place(state.uid, node)
        if not state.started:
            return self._start(key, state, pod, node)
        if state.deadline_due:
            state.deadline_due = False
            return self._exceed_deadline(state, pod)
        if state.finish_due:
            state.finish_due = False
            return self._finish(key, state, pod)
        if state.ready_due:
            state.ready_due = False
            fresh = self._copy(pod)
            set_readiness(fresh["status"], True, self._now())
            return self._write(fresh)
        return False

    def _schedule(self, key: Key, state: _PodState, pod: Obj) -> bool:
        if pod.get("spec", {}).get("schedulerName", "default-scheduler") != "default-scheduler":
            return False  # another scheduler's pod: the default one leaves it alone
        feasible: list[str] = []
        reasons: list[str] = []
        for name in self.scheduler.nodes:
            entry = self.store.entry("nodes", "", name)
            reason = "node(s) were not found" if entry is None else unfit_reason(pod, entry.obj)
            if state.behaviour.unschedulable:
                reason = f"node(s) were excluded by the {UNSCHEDULABLE}=true annotation"
            if reason is None:
                feasible.append(name)
            else:
                reasons.append(reason)
        node = self.scheduler.pick(feasible) if feasible else None
        if node is None:
            self._waiting.add(key)
            message = unschedulable_message(len(self.scheduler.nodes), reasons)
            if _scheduled_condition(pod) == ("False", "Unschedulable", message):
                return False
            fresh = self._copy(pod)
            fresh["status"] = unschedulable_status(fresh, self._now(), message)
            return self._write(fresh)
        self._waiting.discard(key)
        fresh = self._copy(pod)
        fresh.setdefault("spec", {})["nodeName"] = node
        fresh["status"] = scheduled_status(fresh, self._now())
        if not self._write(fresh):
            return False
        self.scheduler.place(state.uid, node)
        return True

    def _start(self, key: Key, state: _PodState, pod: Obj, node: str) -> bool:
        state.started = True
        status = pod.get("status") or {}
        if status.get("phase") == "Running" and status.get("containerStatuses"):
            self._arm(key, state)  # already running (written by someone else): just take it over
            return False
        index = self._node_index[node]
        serial = self._ip_serial[node] = self._ip_serial[node] + 1
        ready = state.behaviour.ready_after_seconds <= 0
        fresh = self._copy(pod)
        fresh["status"] = running_status(fresh, host_ip(index), pod_ip(index, serial), self._now(), ready)
        self._arm(key, state, pod.get("spec", {}).get("activeDeadlineSeconds"))
        return self._write(fresh)

    def _arm(self, key: Key, state: _PodState, deadline: float | None = None) -> None:
        """Timers for one run of the containers: Ready after ready-after-seconds, exit after run-seconds."""
        behaviour = state.behaviour
        if deadline is not None:
            self._after(key, state, deadline, "deadline")
        if behaviour.ready_after_seconds > 0:
            self._after(key, state, behaviour.ready_after_seconds, "ready")
        if behaviour.run_seconds is not None:
            self._after(key, state, behaviour.run_seconds, "finish")

    def _finish(self, key: Key, state: _PodState, pod: Obj) -> bool:
        behaviour = state.behaviour
        code = behaviour.exit_code_for_attempt(self._ledger.next_attempt(behaviour.attempt_key))
        fresh = self._copy(pod)
        now = self._now()
        state.cancel_timers()
        if behaviour.restarts_after(code):
            fresh["status"] = restarted_status(fresh, code, now, ready=behaviour.ready_after_seconds <= 0)
            self._arm(key, state)
        else:
            fresh["status"] = finished_status(fresh, code, now)
            self.scheduler.release(state.uid)
        return self._write(fresh)

    def _exceed_deadline(self, state: _PodState, pod: Obj) -> bool:
        """spec.activeDeadlineSeconds passed: the kubelet kills the containers and fails the pod."""
        state.cancel_timers()
        self.scheduler.release(state.uid)
        fresh = self._copy(pod)
        fresh["status"] = finished_status(fresh, KILLED_EXIT_CODE, self._now())
        fresh["status"]["reason"] = "DeadlineExceeded"
        fresh["status"]["message"] = "Pod was active on the node longer than the specified deadline"
        return self._write(fresh)

    def _terminate(self, key: Key, state: _PodState, pod: Obj) -> bool:
        """A deleted pod: after terminate-seconds its containers are killed and it is removed (grace 0)."""
        if not state.terminating:
            state.terminating = True
            state.cancel_timers()
            self._after(key, state, state.behaviour.terminate_seconds, "terminate")
            return False
        if not state.terminate_due:
            return False
        meta = pod["metadata"]
        if state.started and not state.killed and pod.get("status", {}).get("phase") not in TERMINAL:
            state.killed = True
            fresh = self._copy(pod)
            fresh["status"] = killed_status(fresh, self._now())
            return self._write(fresh)
        state.removed = True
        self.scheduler.release(state.uid)
        self._own_delete = key
        try:
            self.store.delete("pods", meta.get("namespace", ""), meta["name"], uid=state.uid)
        except ApiError as exc:
            log.debug("kubelet could not remove pod %s/%s: %s", *key, exc.message)
        finally:
            self._own_delete = None
        return False

    # -- writes ----------------------------------------------------------------------------------------------
    def _copy(self, pod: Obj) -> Obj:
        meta = pod["metadata"]
        fresh = self.store.get("pods", meta.get("namespace", ""), meta["name"])
        assert fresh is not None
        fresh.setdefault("status", {})
        return fresh

    def _write(self, pod: Obj) -> bool:
        """Write like an API client (optimistic concurrency on the RV we read); True if it was stored."""
        self._own_write = pod
        try:
            self.store.update("pods", pod)
        except ApiError as exc:
            meta = pod["metadata"]
            log.debug(
                "kubelet write to pod %s/%s failed: %s", meta.get("namespace"), meta["name"], exc.message
            )
            return False
        finally:
            self._own_write = None
        return True


def _scheduled_condition(pod: Obj) -> tuple[str, str, str] | None:
    for cond in pod.get("status", {}).get("conditions") or []:
        if cond.get("type") == "PodScheduled":
            return str(cond.get("status")), str(cond.get("reason", "")), str(cond.get("message", ""))
    return None
