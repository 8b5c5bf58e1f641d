"""The HTTP layer under ApiClient: connections, the token bucket, retries (decided in retry.py, as
client-go decides them), timeouts, typed errors and the `rest_client_*` metrics.

Two connection pools, by traffic shape: unary requests (get, list pages, create, update, patch, delete)
go through the lean keep-alive pool of manager/client/http11.py, which is where a controller spends its
client CPU; watches, which stream for minutes, go through one aiohttp session. The request bytes are built
in unary.py, the retry loop runs in exchange.py.
"""

from __future__ import annotations

import asyncio
import copy
import ssl
from collections.abc import Awaitable, Callable
from typing import Any, Self
from urllib.parse import urlsplit

import aiohttp
import orjson

from manager.client import metrics
from manager.client.config import RestConfig
from manager.client.exchange import Reply, exchange
from manager.client.http11 import Http11Pool
from manager.client.managedfields import decode_object_stripped
from manager.client.ratelimit import TokenBucket
from manager.client.unary import Params, Unary, clean_params, unary_request
from manager.client.writegate import WriteGate
from manager.metrics.fasthistogram import FastHistogram

JSON = "application/json"
Sleep = Callable[[float], Awaitable[None]]
__all__ = ["JSON", "Params", "Sleep", "Transport", "clean_params"]


class Transport:
    """Sends requests; `ApiClient` adds the Kubernetes verbs on top."""

    _exchange = exchange  # the retry loop of every request (manager/client/exchange.py)

    def __init__(
        self,
        config: RestConfig,
        *,
        qps: float = 20.0,
        burst: int = 30,
        max_request_connections: int = 100,
        request_timeout: float = 30.0,
        list_timeout: float = 120.0,
        connect_timeout: float = 10.0,
        watch_read_margin: float = 30.0,
        max_retries: int = 10,
        max_retry_after: float = 30.0,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.config = config
        self._url = urlsplit(config.host)
        self.host = self._url.netloc or config.host
        self._base_path = self._url.path.rstrip("/")
        self.rate_limiter = TokenBucket(qps, burst)
        self.request_timeout = request_timeout
        self.list_timeout = list_timeout
        self.connect_timeout = connect_timeout
        self.watch_read_margin = watch_read_margin
        self.max_retries = max_retries
        self.max_retry_after = max_retry_after
        self._sleep = sleep
        # Per-request costs kept off the hot path: the request count and latency series per verb (labels()
        # takes a lock and builds a tuple; throttled requests observe the rate limiter's), the request head's
        # fixed lines.
        self._durations: dict[str, metrics.VerbSeries] = {}
        self._throttled: dict[str, FastHistogram] = {}
        self.user_agent = config.user_agent
        self._fixed_head = f"Host: {self.host}\r\nUser-Agent: {self.user_agent}\r\n"
        self._root: Transport | None = None  # the client whose connections a component client shares
        # monotonic() of the last answer below 500 to any component sharing the root: the API server probe
        # skips its probe while the process's own traffic shows the server answering.
        self.last_answer: float | None = None
        # Every watch pins one HTTP/1.1 connection of the aiohttp session for minutes, so that session has no
        # connection limit (a limit would make the watch after it wait forever); unary requests have their own
        # bounded pool.
        self.request_pool_size = max_request_connections
        self._session: aiohttp.ClientSession | None = None
        self._pool: Http11Pool | None = None
        self._credentials_generation = config.credentials_generation
        # Runs right before each POST/PUT/PATCH/DELETE is written (manager/client/writegate.py).
        self.write_gate: WriteGate | None = None

    def for_component(
        self,
        name: str,
        *,
        qps: float | None = None,
        burst: int | None = None,
        write_gate: WriteGate | None = None,
    ) -> Self:
        """A client for one component (a controller, the event recorder, the informers), as
        kube-controller-manager's client builder gives each controller its own: the same server, credentials
        and connections, but its own rate limiter (`qps`/`burst`, by default this client's) and its own user
        agent, `<this user agent>/<name>`, so one busy component neither starves the others nor hides in
        the API server's audit log. Closing it closes nothing: the client it came from owns the connections.
        `write_gate` checks its writes (by default this client's gate applies).
        """
        derived = copy.copy(self)
        derived._root = self._root or self
        derived.rate_limiter = TokenBucket(
            self.rate_limiter.qps if qps is None else qps,
            self.rate_limiter.burst if burst is None else burst,
        )
        derived.user_agent = f"{self.user_agent}/{name}"
        derived._fixed_head = f"Host: {self.host}\r\nUser-Agent: {derived.user_agent}\r\n"
        derived._durations = self._durations
        derived._throttled = self._throttled
        if write_gate is not None:
            derived.write_gate = write_gate
        return derived

    @property
    def root(self) -> Transport:
        """The client that owns the connections: this one, or the one `for_component` derived it from."""
        return self._root or self

    @property
    def session(self) -> aiohttp.ClientSession:
        """The aiohttp session for watches."""
        if self._root is not None:
            return self._root.session
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(limit=0, ssl=self.config.ssl_context or False)
            self._session = aiohttp.ClientSession(
                connector=connector,
                headers={"User-Agent": self.config.user_agent},
                read_bufsize=2**20,
            )
        return self._session

    @property
    def pool(self) -> Http11Pool:
        """The keep-alive pool for unary requests."""
        if self._root is not None:
            return self._root.pool
        if self._pool is None:
            url = self._url
            secure = url.scheme == "https"
            self._pool = Http11Pool(
                url.hostname or "localhost",
                url.port or (443 if secure else 80),
                ssl_context=(self.config.ssl_context or ssl.create_default_context()) if secure else None,
                server_hostname=self.config.tls_server_name,
                limit=self.request_pool_size,
                connect_timeout=self.connect_timeout,
            )
        return self._pool

    async def close(self) -> None:
        if self._root is not None:
            return  # the connections are the root client's
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None
        if self._pool is not None:
            self._pool.close()
        self._pool = None

    def _observe(self, method: str) -> metrics.VerbSeries:
        """The series this client's `method` answers are observed in (the retry loop looks it up in
        `_durations` first, and calls this only for a verb's first answer)."""
        series = self._durations.get(method)
        if series is None:
            series = self._durations[method] = metrics.REQUESTS.verb(method, self.host)
        return series

    async def _open(
        self,
        method: str,
        path: str,
        *,
        params: Params | None = None,
        accept: str = JSON,
        timeout: aiohttp.ClientTimeout,
        rate_limited: bool = True,
        retry: bool = True,
    ) -> aiohttp.ClientResponse:
        """Open a streamed GET on the aiohttp session; return the open 2xx response (the caller reads and
        releases it)."""
        url = self.config.host + path

        async def attempt_once(headers: dict[str, str]) -> Reply[aiohttp.ClientResponse]:
            headers["Accept"] = accept
            headers["User-Agent"] = self.user_agent
            response = await self.session.request(
                method,
                url,
                params=params,
                headers=headers,
                timeout=timeout,
                server_hostname=self.config.tls_server_name,
            )
            if response.status < 300:
                return response.status, response, b"", None
            try:
                payload = await response.read()
            finally:
                response.release()
            return response.status, None, payload, response.headers.get("Retry-After")

        return await self._exchange(method, path, attempt_once, rate_limited=rate_limited, retry=retry)

    def _unary(
        self,
        method: str,
        path: str,
        params: Params | None,
        body: bytes | None,
        content_type: str,
        accept: str,
        timeout: float | None,
    ) -> Unary:
        """The request line and fixed headers of a unary request, its limit and write gate."""
        limit = timeout or self.request_timeout
        return unary_request(
            self._base_path + path,
            self._fixed_head,
            method,
            params,
            body,
            content_type,
            accept,
            limit,
            self.write_gate,
        )

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
        unary = self._unary(method, path, params, body, content_type, accept, timeout)
        raw: bytes = await self._exchange(method, path, None, unary=unary)
        return raw

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
        strip_managed_fields: bool = False,
    ) -> dict[str, Any]:
        """One request with a JSON body (any object, serialised with orjson) and a decoded JSON answer
        (`strip_managed_fields`: without its metadata.managedFields, which then are mostly not decoded)."""
        payload = None if body is None else body if isinstance(body, bytes) else orjson.dumps(body)
        # request_raw's work without its coroutine nor _unary's call (this is every verb's path).
        unary = unary_request(
            self._base_path + path,
            self._fixed_head,
            method,
            params,
            payload,
            content_type,
            accept,
            timeout or self.request_timeout,
            self.write_gate,
        )
        raw: bytes = await self._exchange(method, path, None, unary=unary)
        if not raw:
            return {}
        decoded = decode_object_stripped(raw) if strip_managed_fields else orjson.loads(raw)
        return decoded if isinstance(decoded, dict) else {"items": decoded}
