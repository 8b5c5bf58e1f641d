"""The HTTP layer under ApiClient: one aiohttp session, the token bucket, retries, timeouts, typed errors
and the `rest_client_*` metrics. Retries happen only where client-go retries: 429 and Retry-After answers
(any verb: the server did not process the request), connection failures before anything was sent (any
verb), and connection resets on GETs.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import orjson
import structlog

from manager.client import metrics
from manager.client.config import RestConfig
from manager.client.errors import ApiError, TooManyRequests, Unauthorized, error_from_response
from manager.client.ratelimit import TokenBucket

log = structlog.get_logger(__name__)

JSON = "application/json"
Params = dict[str, str]
Sleep = Callable[[float], Awaitable[None]]


def clean_params(params: Mapping[str, object | None]) -> Params:
    """Query parameters without the unset ones; booleans as "true"/"false"."""
    out: Params = {}
    for key, value in params.items():
        if value is None:
            continue
        out[key] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return out


class Transport:
    """Sends requests; `ApiClient` adds the Kubernetes verbs on top."""

    def __init__(
        self,
        config: RestConfig,
        *,
        qps: float = 20.0,
        burst: int = 30,
        max_watches: int = 100,
        request_headroom: int = 50,
        request_timeout: float = 30.0,
        list_timeout: float = 120.0,
        connect_timeout: float = 10.0,
        watch_read_margin: float = 30.0,
        max_retries: int = 10,
        max_retry_after: float = 30.0,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.config = config
        self.host = urlsplit(config.host).netloc or config.host
        self.rate_limiter = TokenBucket(qps, burst)
        self.request_timeout = request_timeout
        self.list_timeout = list_timeout
        self.connect_timeout = connect_timeout
        self.watch_read_margin = watch_read_margin
        self.max_retries = max_retries
        self.max_retry_after = max_retry_after
        self._sleep = sleep
        # Per-request costs worth keeping off the hot path (measured ~10 % of a request's client CPU):
        # one ClientTimeout per distinct value, one labelled metric child per (code, verb).
        self._timeouts: dict[float | None, aiohttp.ClientTimeout] = {}
        self._observers: dict[tuple[str, str], tuple[Any, Any]] = {}
        # Every watch pins one HTTP/1.1 connection: size the pool for all of them plus room for requests.
        self.pool_size = max_watches + request_headroom
        self._session: aiohttp.ClientSession | None = None

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(
                limit=self.pool_size, limit_per_host=self.pool_size, ssl=self.config.ssl_context or False
            )
            self._session = aiohttp.ClientSession(
                connector=connector,
                json_serialize=lambda o: orjson.dumps(o).decode(),
                headers={"User-Agent": self.config.user_agent},
                read_bufsize=2**20,
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None

    def _timeout(self, total: float | None) -> aiohttp.ClientTimeout:
        timeout = self._timeouts.get(total)
        if timeout is None:
            timeout = aiohttp.ClientTimeout(total=total, sock_connect=self.connect_timeout)
            self._timeouts[total] = timeout
        return timeout

    def _observe(self, code: str, method: str, seconds: float) -> None:
        children = self._observers.get((code, method))
        if children is None:
            children = (
                metrics.REQUESTS_TOTAL.labels(code, method, self.host),
                metrics.REQUEST_DURATION.labels(method, self.host),
            )
            self._observers[(code, method)] = children
        children[0].inc()
        children[1].observe(seconds)

    async def _open(
        self,
        method: str,
        path: str,
        *,
        params: Params | None = None,
        body: bytes | None = None,
        content_type: str = JSON,
        accept: str = JSON,
        timeout: aiohttp.ClientTimeout,
        rate_limited: bool = True,
        retry: bool = True,
    ) -> aiohttp.ClientResponse:
        """Send one request with retries; return the open 2xx response (the caller reads and releases it).

        `retry=False` leaves every retry to the caller (the reflector has its own backoff for watches).
        """
        url = self.config.host + path
        max_retries = self.max_retries if retry else 0
        attempt = 0
        refreshed_auth = False
        while True:
            if rate_limited and self.rate_limiter.enabled:
                waited = await self.rate_limiter.acquire()
                metrics.RATE_LIMITER_DURATION.labels(method, self.host).observe(waited)
            headers = await self.config.auth_headers()
            headers["Accept"] = accept
            if body is not None:
                headers["Content-Type"] = content_type
            started = time.monotonic()
            try:
                response = await self.session.request(
                    method,
                    url,
                    params=params,
                    data=body,
                    headers=headers,
                    timeout=timeout,
                    server_hostname=self.config.tls_server_name,
                )
            except aiohttp.ClientConnectorError as exc:
                # Nothing reached the server: safe to retry whatever the verb.
                metrics.REQUESTS_TOTAL.labels("<error>", method, self.host).inc()
                if attempt >= max_retries:
                    raise
                attempt += 1
                delay = self._backoff(attempt)
                log.debug(
                    "connection failed, retrying", method=method, path=path, error=str(exc), delay=delay
                )
                metrics.REQUEST_RETRIES.labels("<error>", method, self.host).inc()
                await self._sleep(delay)
                continue
            except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as exc:
                # The request may have been processed: only reads are safe to repeat (client-go's rule).
                metrics.REQUESTS_TOTAL.labels("<error>", method, self.host).inc()
                if method != "GET" or attempt >= max_retries:
                    raise
                attempt += 1
                delay = self._backoff(attempt)
                log.debug("connection reset on GET, retrying", path=path, error=str(exc), delay=delay)
                metrics.REQUEST_RETRIES.labels("<error>", method, self.host).inc()
                await self._sleep(delay)
                continue
            status = response.status
            self._observe(str(status), method, time.monotonic() - started)
            if status < 300:
                return response
            try:
                payload = await response.read()
            finally:
                response.release()
            error = error_from_response(status, payload)
            retry_after = self._retry_after(response, error)
            if retry_after is not None and attempt < max_retries:
                attempt += 1
                metrics.REQUEST_RETRIES.labels(str(status), method, self.host).inc()
                await self._sleep(retry_after)
                continue
            if isinstance(error, Unauthorized) and not refreshed_auth:
                refreshed_auth = True
                await self.config.refresh_after_unauthorized()
                continue
            raise error

    def _backoff(self, attempt: int) -> float:
        return float(min(5.0, 0.1 * 2 ** (attempt - 1)) * (1 + random.random()))

    def _retry_after(self, response: aiohttp.ClientResponse, error: ApiError) -> float | None:
        """Seconds to wait before retrying, or None when this answer must not be retried.

        As client-go: 429, and 5xx answers carrying Retry-After, are retried for every verb (the server
        asked for it and did not process the request). A 429 without a hint backs off exponentially.
        """
        header = response.headers.get("Retry-After")
        seconds: float | None = None
        if header is not None:
            try:
                seconds = max(0.0, float(header))
            except ValueError:
                seconds = None
        if seconds is None:
            seconds = error.retry_after_seconds
        if isinstance(error, TooManyRequests):
            return min(self.max_retry_after, seconds if seconds is not None else 1.0)
        if error.status >= 500 and header is not None and seconds is not None:
            return min(self.max_retry_after, seconds)
        return None

    async def request_raw(
        self,
        method: str,
        path: str,
        *,
        params: Params | None = None,
        body: bytes | None = None,
        content_type: str = JSON,
        accept: str = JSON,
        timeout: float | None = None,
    ) -> bytes:
        """One request; returns the response body bytes of a 2xx answer, raises `ApiError` otherwise."""
        response = await self._open(
            method,
            path,
            params=params,
            body=body,
            content_type=content_type,
            accept=accept,
            timeout=self._timeout(timeout or self.request_timeout),
        )
        try:
            return await response.read()
        finally:
            response.release()

    async def request_json(
        self,
        method: str,
        path: str,
        *,
        params: Params | None = None,
        body: object | None = None,
        content_type: str = JSON,
        accept: str = JSON,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """One request with a JSON body (any object, serialised with orjson) and a decoded JSON answer."""
        payload = None if body is None else body if isinstance(body, bytes) else orjson.dumps(body)
        raw = await self.request_raw(
            method,
            path,
            params=params,
            body=payload,
            content_type=content_type,
            accept=accept,
            timeout=timeout,
        )
        decoded = orjson.loads(raw) if raw else {}
        return decoded if isinstance(decoded, dict) else {"items": decoded}
