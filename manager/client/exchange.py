"""The retry loop of one request (client-go's request.go: Do and its retry decisions): the rate limiter,
credentials, one attempt, the `rest_client_*` metrics, then a 2xx result, a retry or a typed error. A method
of Transport (`Transport._exchange`) kept in its own module."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

import structlog

from manager.client import metrics
from manager.client.errors import Unauthorized, error_from_response
from manager.client.retry import MAYBE_SENT, NOT_SENT, connection_backoff, retry_after
from manager.client.unary import Unary

if TYPE_CHECKING:
    from manager.client.transport import Transport

log = structlog.get_logger("manager.client.transport")

T = TypeVar("T")
# (status, the 2xx result or None, the error body, Retry-After) of one attempt.
Reply = tuple[int, T | None, bytes, str | None]


async def exchange(
    self: Transport,
    method: str,
    path: str,
    attempt_once: Callable[[dict[str, str]], Awaitable[Reply[T]]] | None,
    *,
    unary: Unary | None = None,
    rate_limited: bool = True,
    retry: bool = True,
) -> T:
    """Run `attempt_once(auth_headers)` until it yields a 2xx result, retrying as client-go does.

    `unary` instead of `attempt_once`: a request of the keep-alive pool, sent inline (one coroutine and
    closure fewer per request than an `attempt_once` would cost; the result is the answer's body).
    `retry=False` leaves every retry to the caller (the reflector has its own backoff for watches).
    """
    max_retries = self.max_retries if retry else 0
    attempt = 0
    refreshed_auth = False
    result: T | None
    while True:
        if rate_limited and self.rate_limiter.enabled:
            limiter = self.rate_limiter
            # A stored token is taken without the acquire() coroutine (most requests under the burst).
            waited = 0.0 if limiter.try_acquire() else await limiter.acquire()
            throttled = self._throttled.get(method)
            if throttled is None:
                throttled = metrics.REQUESTS.rate_limiter(method, self.host)
                self._throttled[method] = throttled
            throttled.observe(waited)
        headers = self.config.auth_headers_now()
        if headers is None:
            headers = await self.config.auth_headers()
        if self.config.credentials_generation != self._credentials_generation:
            self._credentials_generation = self.config.credentials_generation
            root = self._root or self
            if root._pool is not None:
                root._pool.close_idle()
        started = time.monotonic()
        try:
            if unary is not None:
                # The root's pool without the `pool` property (two property calls for a component client).
                pool = (self._root or self)._pool or self.pool
                answer = await pool.request(unary.data(headers), unary.limit, gate=unary.gate)
                status, payload, retry_after_header = answer.status, answer.body, None
                if status < 300:
                    result = payload  # type: ignore[assignment]  # T is bytes here (no cast() call per request)
                else:
                    result = None
                    retry_after_header = answer.header("Retry-After")
            else:
                assert attempt_once is not None
                status, result, payload, retry_after_header = await attempt_once(headers)
        except NOT_SENT as exc:
            metrics.REQUESTS.count("<error>", method, self.host)
            if attempt >= max_retries:
                raise
            attempt += 1
            await _retry_later(self, attempt, "connection failed, retrying", method, path, exc)
            continue
        except MAYBE_SENT as exc:
            # The request may have been processed: only reads are safe to repeat (client-go's rule).
            metrics.REQUESTS.count("<error>", method, self.host)
            if method != "GET" or attempt >= max_retries:
                raise
            attempt += 1
            await _retry_later(self, attempt, "connection reset on GET, retrying", method, path, exc)
            continue
        answered = time.monotonic()
        series = self._durations.get(method) or self._observe(method)
        series.observe(status, answered - started)
        if status < 500:
            (self._root or self).last_answer = answered
        if result is not None:
            return result
        error = error_from_response(status, payload)
        wait = retry_after(retry_after_header, error, self.max_retry_after)
        if wait is not None and attempt < max_retries:
            attempt += 1
            metrics.REQUEST_RETRIES.labels(str(status), method, self.host).inc()
            await self._sleep(wait)
            continue
        if isinstance(error, Unauthorized) and not refreshed_auth:
            refreshed_auth = True
            await self.config.refresh_after_unauthorized()
            continue
        raise error


async def _retry_later(
    self: Transport, attempt: int, message: str, method: str, path: str, exc: Exception
) -> None:
    delay = connection_backoff(attempt)
    log.debug(message, method=method, path=path, error=str(exc), delay=delay)
    metrics.REQUEST_RETRIES.labels("<error>", method, self.host).inc()
    await self._sleep(delay)
