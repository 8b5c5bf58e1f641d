"""A cheap periodic probe of the API server: the `apiserver` readiness check and the end of backoff waits.

Informers alone see an outage late: an open watch to a frozen API server (SIGSTOP: connections accepted,
nothing answered) is just quiet, and reflector backoff grows to 30 s while the server is down. The probe
sends `GET /readyz` every `interval` seconds (every `RECOVERY_INTERVAL` while it fails), each bounded by
`timeout`, on its own client component (its own rate limiter, no retries), so a busy controller cannot
delay it and it cannot starve anyone. A probe is skipped when another request of this process got an answer
since the last probe and within `interval` (`last_answer`): the server is up, and the probe would only wake
the process to say so again; that answer counts as the probe's. While failing, every probe is sent.

- Readiness: the `apiserver` check fails once `failure_threshold` probes in a row failed (refused, timed
  out, or a 5xx answer); its reason says how long and why. Any answer below 500 counts as an answer (401 or
  403 still prove the server is up; they are logged).
- Recovery: the first successful probe after a failure calls `on_recovered` (the informer factory's
  `retry_now`), so every reflector waiting out a backoff lists and watches again at once.
- Metrics: `apiserver_probe_reachable` (1 or 0), `apiserver_probe_last_success_timestamp_seconds`,
  `apiserver_probe_failures_total`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import structlog
from prometheus_client import Counter, Gauge

from manager.client.errors import ApiError
from manager.client.rest import ApiClient
from manager.lifecycle.manager import Group

if TYPE_CHECKING:
    from manager.lifecycle.manager import Manager

log = structlog.get_logger(__name__)

PATH = "/readyz"
RECOVERY_INTERVAL = 1.0  # probe at least this often while failing: recovery is seen within a second

REACHABLE = Gauge(
    "apiserver_probe_reachable", "1 when the last probe of the API server's /readyz got an answer below 500."
)
LAST_SUCCESS = Gauge(
    "apiserver_probe_last_success_timestamp_seconds",
    "Unix time of the last successful probe of the API server, or of the skipped probe another answer made "
    "unnecessary (0: none yet).",
)
FAILURES = Counter("apiserver_probe_failures_total", "Failed probes of the API server's /readyz.")


class ApiServerProbe:
    """A runnable (`start`/`stop`) probing the API server; `health_check` is the `apiserver` check."""

    def __init__(
        self,
        client: ApiClient,
        *,
        interval: float = 5.0,
        timeout: float = 3.0,
        failure_threshold: int = 3,
        on_recovered: Callable[[], None] = lambda: None,
        last_answer: Callable[[], float | None] = lambda: None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        if interval <= 0 or timeout <= 0 or failure_threshold < 1:
            raise ValueError("probe interval and timeout must be positive, the failure threshold at least 1")
        self.client = client
        self.interval = interval
        self.timeout = timeout
        self.failure_threshold = failure_threshold
        self.on_recovered = on_recovered
        self._last_answer = last_answer  # clock() of the process's last answer below 500 (its own included)
        self._clock = clock
        self._sleep = sleep
        self._task: asyncio.Task[None] | None = None
        self.probes = 0
        self.skipped = 0
        self._probed_at = float("-inf")  # clock() when the last probe ended: its own answer is not news
        self.consecutive_failures = 0
        self.failing_since: float | None = None
        self.last_error: str | None = None
        self.last_success: float | None = None  # clock() of the last successful probe

    # ------------------------------------------------------------------ runnable
    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="apiserver-probe")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _run(self) -> None:
        while True:
            if not self._answered_lately():
                await self.probe_once()
            await self._sleep(self.interval if self.failing_since is None else self._failing_interval())

    def _failing_interval(self) -> float:
        return min(self.interval, RECOVERY_INTERVAL)

    def _answered_lately(self) -> bool:
        """Another request got an answer since the last probe and within the interval: record it as this
        probe's success (True), or say a probe is needed (False)."""
        if self.failing_since is not None:
            return False
        heard = self._last_answer()
        if heard is None or heard <= self._probed_at or self._clock() - heard >= self.interval:
            return False
        self.skipped += 1
        self._succeeded()
        return True

    # ------------------------------------------------------------------ one probe
    async def probe_once(self) -> bool:
        """Probe once and record the outcome; True when the API server answered."""
        self.probes += 1
        error = await self._request()
        self._probed_at = self._clock()
        if error is None:
            self._succeeded()
            return True
        self._failed(error)
        return False

    async def _request(self) -> str | None:
        """None when the API server answered below 500, else why not."""
        try:
            async with asyncio.timeout(self.timeout):
                await self.client.request_raw("GET", PATH, accept="text/plain", timeout=self.timeout)
        except ApiError as exc:
            if exc.status >= 500:
                return f"{PATH} answered {exc}"
            log.debug("API server probe answered with an error status", status=exc.status)
        except TimeoutError:
            return f"no answer to GET {PATH} within {self.timeout:g}s"
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # refused, reset, DNS, TLS: all mean unreachable
            return f"GET {PATH}: {type(exc).__name__}: {exc}"
        return None

    def _succeeded(self) -> None:
        recovered = self.failing_since is not None
        if recovered:
            log.info(
                "API server answers again",
                after_seconds=round(self._clock() - (self.failing_since or 0.0), 1),
                failed_probes=self.consecutive_failures,
            )
        self.consecutive_failures = 0
        self.failing_since = None
        self.last_error = None
        self.last_success = self._clock()
        REACHABLE.set(1)
        LAST_SUCCESS.set(time.time())
        if recovered:
            self.on_recovered()

    def _failed(self, error: str) -> None:
        if self.failing_since is None:
            self.failing_since = self._clock()
            log.warning("API server probe failed", error=error)
        self.consecutive_failures += 1
        self.last_error = error
        REACHABLE.set(0)
        FAILURES.inc()

    # ------------------------------------------------------------------ readiness
    def health_check(self) -> str | None:
        """None until `failure_threshold` probes in a row failed; then how long and the last error."""
        if self.consecutive_failures < self.failure_threshold or self.failing_since is None:
            return None
        failing = self._clock() - self.failing_since
        return (
            f"API server {self.client.host} not answering for {failing:.0f}s "
            f"({self.consecutive_failures} probes failed; last: {self.last_error})"
        )


def install_probe(
    manager: Manager, client: ApiClient, on_recovered: Callable[[], None]
) -> ApiServerProbe | None:
    """Wire the probe into `manager` (settings `--apiserver-probe-*`): started with the health server, its
    check on /readyz only (the API server's outage is not this process's: restarting it fixes nothing), the
    reason shown in `/readyz?verbose`. None when `--apiserver-probe-interval` is 0."""
    settings = manager.settings
    interval = settings.apiserver_probe_interval
    if interval <= 0:
        return None
    fastest = min(interval, RECOVERY_INTERVAL)
    component = client.for_component("apiserver-probe", qps=2.0 / fastest, burst=2)
    component.max_retries = 0  # a failed probe is an answer; the next one comes soon enough
    probe = ApiServerProbe(
        component,
        interval=interval,
        timeout=settings.apiserver_probe_timeout,
        failure_threshold=settings.apiserver_probe_failure_threshold,
        on_recovered=on_recovered,
        last_answer=lambda: component.root.last_answer,
    )
    manager.add_runnable(Group.SERVER, probe)
    manager.health.add("apiserver", probe.health_check, healthz=False, livez=False, show_reason=True)
    return probe
