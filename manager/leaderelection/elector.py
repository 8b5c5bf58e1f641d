"""The leader elector: client-go's algorithm on a coordination.k8s.io/v1 Lease, with fail-fast semantics.

- Acquire: try at once, then every `retry_period` with jitter (factor 1.2) until the lease is free or expired.
- Expiry of another holder's lease is judged on our own clock: it is expired when its record has not
  changed for `lease_duration` since *we* last saw it change. Timestamps written to the Lease are only for
  humans and other clients (MicroTime, exactly six fractional digits, as the API server insists).
- Renew: every `retry_period`; each renewal may retry until `renew_deadline`, and each API call has its own
  deadline (`call_timeout`, shorter than the renew deadline). Missing the deadline means the lease is lost:
  `run()` returns and the manager exits non-zero ("leaderelection lost").
- Fence (manager/leaderelection/fence.py): our own writes are allowed only until `lease_duration - margin`
  after the latest successful renewal was *sent*; when that passes (a pause longer than the lease, a stuck
  renewal) the fence closes at once, before any further write, and `run()` returns as for a lost lease.
- Release on a clean stop: the fence closes, the Lease is read (a renewal cancelled in flight may have
  landed) and, if still ours, its holder is cleared and leaseDurationSeconds set to 1, so a standby takes
  over at its next retry instead of waiting for the lease to expire.
"""

from __future__ import annotations

import asyncio
import datetime
import random
import socket
import uuid
from typing import TYPE_CHECKING, Any

import structlog
from prometheus_client import Counter, Gauge

from manager.apimachinery.resources import LEASES
from manager.client.errors import ApiError, Conflict, NotFound
from manager.leaderelection.fence import DEFAULT_MARGIN_RATIO, Clock, LeaseFence, lease_clock

if TYPE_CHECKING:
    from manager.client.rest import ApiClient

log = structlog.get_logger(__name__)

JITTER_FACTOR = 1.2
HEALTH_TOLERANCE = 20.0  # kube-controller-manager's NewLeaderHealthzAdaptor(20 * time.Second)

MASTER_STATUS = Gauge(
    "leader_election_master_status",
    "Gauge of if the reporting system is master of the relevant lease, "
    "0 indicates backup, 1 indicates master.",
    ["name"],
)
SLOWPATH = Counter(
    "leader_election_slowpath", "Total number of slow path exercised in renewing leader leases.", ["name"]
)


def micro_time(when: datetime.datetime | None = None) -> str:
    """metav1.MicroTime: RFC 3339 in UTC with exactly six fractional digits."""
    moment = when or datetime.datetime.now(datetime.UTC)
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def default_identity() -> str:
    return f"{socket.gethostname()}_{uuid.uuid4()}"


class LeaderElector:
    def __init__(
        self,
        client: ApiClient,
        name: str,
        namespace: str,
        *,
        identity: str | None = None,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        call_timeout: float | None = None,
        release_on_cancel: bool = True,
        fence_margin: float | None = None,
        clock: Clock | None = None,
    ) -> None:
        if not lease_duration > renew_deadline > JITTER_FACTOR * retry_period > 0:
            raise ValueError(
                "leader election needs lease duration > renew deadline > 1.2 x retry period > 0, got "
                f"{lease_duration} / {renew_deadline} / {retry_period}"
            )
        self.client = client
        self.name = name
        self.namespace = namespace
        self.identity = identity or default_identity()
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.call_timeout = call_timeout if call_timeout is not None else renew_deadline / 2
        self.release_on_cancel = release_on_cancel
        self._clock = clock
        self.fence_margin = lease_duration * DEFAULT_MARGIN_RATIO if fence_margin is None else fence_margin
        self.fence = LeaseFence(lease_duration, self.fence_margin, self.now)
        self.leading = False
        self.elected = asyncio.Event()
        self.observed_spec: dict[str, Any] | None = None
        self.observed_time = 0.0
        self._resource_version: str | None = None
        MASTER_STATUS.labels(name).set(0)

    # ------------------------------------------------------------------ public
    def now(self) -> float:
        """Our clock: the injected one, else lease_clock (it counts a pause or a suspend)."""
        return self._clock() if self._clock is not None else lease_clock()

    def check_leading(self) -> None:
        """Write gate of the leader-only controllers: raises NotLeader unless we may act on the lease."""
        self.fence.check()

    def check_not_deposed(self) -> None:
        """Write gate of components shared with standby work: raises NotLeader once we led and may not
        any more."""
        self.fence.check_not_deposed()

    async def run(self) -> None:
        """Acquire the lease, then keep renewing it; returns when leadership is lost.

        Cancelling it stops the election; when leading and `release_on_cancel` is set, the lease is released.
        """
        if self.fence.held:  # a new term: the fence of the last one stays closed for whoever kept it
            self.fence = LeaseFence(self.lease_duration, self.fence_margin, self.now)
        try:
            await self._acquire()
            self._set_leading(True)
            log.info("became leader", lease=f"{self.namespace}/{self.name}", identity=self.identity)
            await self._renew()
            log.error("leaderelection lost", lease=f"{self.namespace}/{self.name}", identity=self.identity)
        except asyncio.CancelledError:
            was_leading = self.leading
            self._set_leading(False)
            if was_leading and self.release_on_cancel:
                await self.release()
            raise
        finally:
            self._set_leading(False)

    async def release(self) -> bool:
        """Give the lease up if we hold it (holder cleared, duration 1 s, transitions kept).

        Read first, as client-go's release() does: a renewal cancelled in flight may still have landed and
        moved the resourceVersion. A Conflict (a renewal landing between our read and our write) is read
        and tried once more.
        """
        if not self._holds():
            return False
        try:
            async with asyncio.timeout(self.call_timeout):
                for attempt in (1, 2):
                    try:
                        return await self._release_current()
                    except Conflict:
                        if attempt == 2:
                            raise
        except (ApiError, OSError, TimeoutError) as exc:
            log.warning("failed to release the lease", error=str(exc))
        return False

    async def _release_current(self) -> bool:
        self._observe(await self.client.get(LEASES, self.name, self.namespace))
        if not self._holds():
            return False  # taken over behind our back: not ours to clear
        assert self.observed_spec is not None
        now = micro_time()
        spec = {
            "holderIdentity": "",
            "leaseDurationSeconds": 1,
            "acquireTime": now,
            "renewTime": now,
            "leaseTransitions": self.observed_spec.get("leaseTransitions", 0),
        }
        await self._update(spec)
        log.info("released the lease", lease=f"{self.namespace}/{self.name}")
        return True

    def health_check(self) -> str | None:
        """`leaderElection`: fails when we lead but have not renewed for lease duration + 20 s."""
        if not self.leading:
            return None
        since = self.now() - self.observed_time
        if since > self.lease_duration + HEALTH_TOLERANCE:
            return f"failed election to renew leadership on lease {self.name}"
        return None

    # ------------------------------------------------------------------ the algorithm
    async def _acquire(self) -> None:
        while True:
            if await self._attempt(self.call_timeout):
                return
            delay = self.retry_period * (1 + random.random() * JITTER_FACTOR)
            await asyncio.sleep(delay)

    async def _renew(self) -> None:
        """Renew until a renewal round misses its deadline or the fence closes; returns when lost."""
        fence = self.fence
        while True:
            deadline = self.now() + self.renew_deadline
            while True:
                remaining = min(deadline, fence.closes_at) - self.now()
                if remaining <= 0 or not fence.is_open():
                    return
                if await self._attempt(min(self.call_timeout, remaining)):
                    break
                remaining = min(deadline, fence.closes_at) - self.now()
                if remaining <= 0:
                    return
                await asyncio.sleep(min(self.retry_period, remaining))
            await asyncio.sleep(max(0.0, min(self.retry_period, fence.closes_at - self.now())))

    async def _attempt(self, timeout: float) -> bool:
        try:
            async with asyncio.timeout(timeout):
                return await self._try_acquire_or_renew()
        except TimeoutError:
            log.warning("lease call timed out", timeout=timeout)
        except (ApiError, OSError) as exc:
            log.warning("lease call failed", error=str(exc))
        except Exception:  # e.g. a malformed Lease: keep the election alive, count it as a failed try
            log.exception("unexpected error in a lease call")
        return False

    def _holds(self) -> bool:
        return self.observed_spec is not None and self.observed_spec.get("holderIdentity") == self.identity

    async def _try_acquire_or_renew(self) -> bool:
        now = micro_time()
        spec: dict[str, Any] = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": max(1, int(self.lease_duration)),
            "acquireTime": now,
            "renewTime": now,
            "leaseTransitions": 0,
        }
        # Fast path: we hold it and our view is fresh, so update with the resourceVersion we know.
        if self._holds() and self.observed_time + self.lease_duration > self.now():
            assert self.observed_spec is not None
            spec["acquireTime"] = self.observed_spec.get("acquireTime", now)
            spec["leaseTransitions"] = self.observed_spec.get("leaseTransitions", 0)
            sent = self.now()
            try:
                await self._update(spec)
                self.fence.renewed(sent)
                return True
            except ApiError:
                SLOWPATH.labels(self.name).inc()
        try:
            lease = await self.client.get(LEASES, self.name, self.namespace)
        except NotFound:
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": spec,
            }
            sent = self.now()
            try:
                created = await self.client.create(LEASES, body, self.namespace)
            except Conflict:
                return False
            self._observe(created)
            self.fence.renewed(sent)
            return True
        current = lease.get("spec") or {}
        if current != self.observed_spec:
            self._observe(lease)
        else:
            self._resource_version = lease["metadata"].get("resourceVersion")
        holder = current.get("holderIdentity") or ""
        if self.leading and holder != self.identity:
            self.fence.close(f"the lease is held by {holder!r} now")  # it was taken over behind our back
            return False
        if holder and holder != self.identity and self.observed_time + self.lease_duration > self.now():
            return False  # held by someone else and not expired by our own clock
        if holder == self.identity:
            spec["acquireTime"] = current.get("acquireTime", now)
            spec["leaseTransitions"] = current.get("leaseTransitions", 0)
        else:
            spec["leaseTransitions"] = int(current.get("leaseTransitions") or 0) + 1
        sent = self.now()
        try:
            await self._update(spec)
        except Conflict:
            return False
        self.fence.renewed(sent)
        return True

    async def _update(self, spec: dict[str, Any]) -> None:
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "resourceVersion": self._resource_version,
            },
            "spec": spec,
        }
        updated = await self.client.update(LEASES, body)
        self._observe(updated)

    def _observe(self, lease: dict[str, Any]) -> None:
        self.observed_spec = lease.get("spec") or {}
        self._resource_version = lease["metadata"].get("resourceVersion")
        self.observed_time = self.now()

    def _set_leading(self, leading: bool) -> None:
        if not leading:
            self.fence.close("leadership ended")
        if leading == self.leading:
            return
        self.leading = leading
        MASTER_STATUS.labels(self.name).set(1 if leading else 0)
        if leading:
            self.elected.set()
        else:
            self.elected.clear()
