"""The HTTP layer under ApiClient: connections, the token bucket, retries (decided in retry.py, as
client-go decides them), timeouts, typed errors and the `rest_client_*` metrics.

Two kinds of connections, by traffic shape: unary requests (get, list pages, create, update, patch,
delete) go through the lean keep-alive pool of manager/client/http11.py, which is where a controller spends
its client CPU; each watch, which streams for minutes, gets a connection of its own from
manager/client/stream11.py (built the same way), closed when the watch ends. The request bytes are built in
unary.py, the retry loop runs in exchange.py.
"""

from __future__ import annotations

import asyncio
import copy
import ssl
from collections.abc import Awaitable, Callable
from typing import Any, Self
from urllib.parse import urlsplit

import orjson

from manager.client import metrics
from manager.client.config import RestConfig
from manager.client.exchange import Reply, exchange
from manager.client.http11 import Http11Pool
from manager.client.managedfields import decode_object_stripped
from manager.client.ratelimit import TokenBucket
from manager.client.stream11 import StreamResponse, open_stream
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
        # Every watch pins a connection of its own for minutes, so watches have no connection limit (a limit
        # would make the watch after it wait forever); unary requests have their own bounded pool. The
        # root client tracks the open watch connections to close them with the client.
        self.request_pool_size = max_request_connections
        self._pool: Http11Pool | None = None
        self._streams: set[StreamResponse] = set()
        secure = self._url.scheme == "https"
        self._address = (self._url.hostname or "localhost", self._url.port or (443 if secure else 80))
        self._secure = secure
        self._default_tls: ssl.SSLContext | None = None
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
    def open_watches(self) -> int:
        """How many watch connections are open (the root client's count: component clients share it)."""
        return len(self.root._streams)  # a stream leaves the set when it closes

    def _ssl_context(self) -> ssl.SSLContext | None:
        """The TLS context of every connection: the configured one (a client certificate is loaded into it
        in place), the system's default for an https server without one, none for plain http."""
        if not self._secure:
            return None
        if self.config.ssl_context is not None:
            return self.config.ssl_context
        root = self.root
        if root._default_tls is None:
            root._default_tls = ssl.create_default_context()  # loads the system's CAs: once
        return root._default_tls

    @property
    def pool(self) -> Http11Pool:
        """The keep-alive pool for unary requests."""
        if self._root is not None:
            return self._root.pool
        if self._pool is None:
            self._pool = Http11Pool(
                *self._address,
                ssl_context=self._ssl_context(),
                server_hostname=self.config.tls_server_name,
                limit=self.request_pool_size,
                connect_timeout=self.connect_timeout,
            )
        return self._pool

    async def close(self) -> None:
        if self._root is not None:
            return  # the connections are the root client's
        for stream in list(self._streams):
            stream.close()  # drops it from the set
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
        read_timeout: float | None,
        rate_limited: bool = True,
        retry: bool = True,
    ) -> StreamResponse:
        """Open a streamed request on a connection of its own; return the response of a 2xx answer, its body
        unread (the caller reads and closes it). `read_timeout`: the stream fails with TimeoutError after that
        many seconds without a byte from the server (None: never)."""
        # The same request line and headers as a unary request's; Accept-Encoding as aiohttp sent it before
        # (kube-apiserver does not compress watches, but a server that does is decoded).
        unary = unary_request(
            self._base_path + path,
            self._fixed_head + "Accept-Encoding: gzip, deflate\r\n",
            method,
            params,
            None,
            JSON,
            accept,
            0.0,
            None,
        )
        streams = self.root._streams

        async def attempt_once(headers: dict[str, str]) -> Reply[StreamResponse]:
            response = await open_stream(
                *self._address,
                unary.data(headers),
                ssl_context=self._ssl_context(),
                server_hostname=self.config.tls_server_name,
                connect_timeout=self.connect_timeout,
                idle_timeout=read_timeout,
            )
            if response.status < 300:
                response.on_close = streams.discard
                if not response.closed:  # a whole answer may have come with its head, and closed it
                    streams.add(response)
                return response.status, response, b"", None
            payload = await response.body()
            return response.status, None, payload, response.header("Retry-After")

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
