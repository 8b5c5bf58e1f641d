"""The API client: one aiohttp session, raw JSON via orjson, generic addressing by GroupVersionResource.

Every request goes through `_open`: client-side token bucket (watches exempt), an explicit timeout,
retries only where client-go retries (429 and Retry-After answers; connection failures before the request
was sent; connection resets on GETs), typed errors from the Status body, and the `rest_client_*` metrics.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal
from urllib.parse import urlsplit

import aiohttp
import orjson
import structlog

from manager.client import metrics
from manager.client.config import RestConfig, load_config
from manager.client.errors import ApiError, TooManyRequests, Unauthorized, error_from_response
from manager.client.ratelimit import TokenBucket
from manager.client.watch import WatchStream
from manager.resources import GroupVersionResource

log = structlog.get_logger(__name__)

PatchType = Literal["merge", "strategic", "json", "apply"]
PATCH_CONTENT_TYPES: dict[str, str] = {
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "json": "application/json-patch+json",
    "apply": "application/apply-patch+yaml",
}
JSON = "application/json"
METADATA_LIST_ACCEPT = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
METADATA_ACCEPT = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"

Params = dict[str, str]
Sleep = Callable[[float], Awaitable[None]]


def _clean(params: Mapping[str, object | None]) -> Params:
    out: Params = {}
    for key, value in params.items():
        if value is None:
            continue
        out[key] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return out


class ApiClient:
    """Async Kubernetes REST client on raw dicts: `await create_client(...)`, then `await close()`.

    Timeouts: `request_timeout` (whole request, default 30 s) for single objects, `list_timeout` for lists;
    watches use the server's `timeoutSeconds` plus a client read timeout of `watch_read_margin` on every
    socket read.
    """

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
        # Every watch pins one HTTP/1.1 connection: size the pool for all of them plus room for requests.
        self.pool_size = max_watches + request_headroom
        self._session: aiohttp.ClientSession | None = None

    # ------------------------------------------------------------------ construction
    @classmethod
    async def from_settings(cls, settings: Any, **kwargs: Any) -> ApiClient:
        """Build from `manager.settings.Settings` (kubeconfig, master, kube_api_qps, kube_api_burst)."""
        return await create_client(
            kubeconfig=settings.kubeconfig,
            master=settings.master,
            qps=settings.kube_api_qps,
            burst=settings.kube_api_burst,
            **kwargs,
        )

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

    async def __aenter__(self) -> ApiClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ------------------------------------------------------------------ transport
    def _timeout(self, total: float | None) -> aiohttp.ClientTimeout:
        return aiohttp.ClientTimeout(total=total, sock_connect=self.connect_timeout)

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
            metrics.REQUESTS_TOTAL.labels(str(status), method, self.host).inc()
            metrics.REQUEST_DURATION.labels(method, self.host).observe(time.monotonic() - started)
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

    # ------------------------------------------------------------------ verbs
    async def get(
        self,
        gvr: GroupVersionResource,
        name: str,
        namespace: str | None = None,
        *,
        subresource: str | None = None,
        metadata_only: bool = False,
    ) -> dict[str, Any]:
        """GET one object (raises NotFound)."""
        return await self.request_json(
            "GET",
            gvr.api_path(namespace, name, subresource),
            accept=METADATA_ACCEPT if metadata_only else JSON,
        )

    async def list(
        self,
        gvr: GroupVersionResource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resource_version: str | None = None,
        resource_version_match: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
        metadata_only: bool = False,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """LIST one page: the List object (`items`, `metadata.resourceVersion`, `metadata.continue`)."""
        raw = await self.list_raw(
            gvr,
            namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            resource_version=resource_version,
            resource_version_match=resource_version_match,
            limit=limit,
            continue_token=continue_token,
            metadata_only=metadata_only,
            timeout=timeout,
        )
        decoded = orjson.loads(raw)
        return decoded if isinstance(decoded, dict) else {}

    async def list_raw(
        self,
        gvr: GroupVersionResource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resource_version: str | None = None,
        resource_version_match: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
        metadata_only: bool = False,
        timeout: float | None = None,
    ) -> bytes:
        """LIST one page and return the undecoded body (the reflector decodes it in one go)."""
        params = _clean(
            {
                "labelSelector": label_selector,
                "fieldSelector": field_selector,
                "resourceVersion": resource_version,
                "resourceVersionMatch": resource_version_match,
                "limit": limit or None,
                "continue": continue_token,
            }
        )
        return await self.request_raw(
            "GET",
            gvr.api_path(namespace),
            params=params,
            accept=METADATA_LIST_ACCEPT if metadata_only else JSON,
            timeout=timeout or self.list_timeout,
        )

    async def create(
        self,
        gvr: GroupVersionResource,
        body: dict[str, Any],
        namespace: str | None = None,
        *,
        field_manager: str | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """POST a new object (namespace defaults to `body.metadata.namespace`; raises AlreadyExists)."""
        ns = namespace or body.get("metadata", {}).get("namespace")
        params = _clean({"fieldManager": field_manager, "dryRun": "All" if dry_run else None})
        return await self.request_json("POST", gvr.api_path(ns), params=params, body=body)

    async def update(
        self,
        gvr: GroupVersionResource,
        body: dict[str, Any],
        *,
        field_manager: str | None = None,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        """PUT the whole object (optimistic concurrency on `metadata.resourceVersion`; raises Conflict)."""
        meta = body.get("metadata", {})
        path = gvr.api_path(meta.get("namespace"), meta["name"], subresource)
        return await self.request_json("PUT", path, params=_clean({"fieldManager": field_manager}), body=body)

    async def update_status(
        self, gvr: GroupVersionResource, body: dict[str, Any], *, field_manager: str | None = None
    ) -> dict[str, Any]:
        """PUT the status subresource."""
        return await self.update(gvr, body, field_manager=field_manager, subresource="status")

    async def patch(
        self,
        gvr: GroupVersionResource,
        name: str,
        patch: object,
        namespace: str | None = None,
        *,
        patch_type: PatchType = "merge",
        field_manager: str | None = None,
        force: bool | None = None,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        """PATCH with a merge, strategic-merge, JSON (list of ops) or server-side apply patch."""
        if patch_type == "apply" and not field_manager:
            raise ValueError("server-side apply needs a field_manager")
        params = _clean({"fieldManager": field_manager, "force": force})
        return await self.request_json(
            "PATCH",
            gvr.api_path(namespace, name, subresource),
            params=params,
            body=patch,
            content_type=PATCH_CONTENT_TYPES[patch_type],
        )

    async def delete(
        self,
        gvr: GroupVersionResource,
        name: str,
        namespace: str | None = None,
        *,
        propagation_policy: Literal["Foreground", "Background", "Orphan"] | None = None,
        preconditions: dict[str, str] | None = None,
        grace_period_seconds: int | None = None,
    ) -> dict[str, Any]:
        """DELETE one object; returns the server's answer (the object while finalizers run, or a Status)."""
        return await self.request_json(
            "DELETE",
            gvr.api_path(namespace, name),
            body=_delete_options(propagation_policy, preconditions, grace_period_seconds),
        )

    async def delete_collection(
        self,
        gvr: GroupVersionResource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        propagation_policy: Literal["Foreground", "Background", "Orphan"] | None = None,
        grace_period_seconds: int | None = None,
    ) -> dict[str, Any]:
        """DELETE every object of the collection matching the selectors."""
        params = _clean({"labelSelector": label_selector, "fieldSelector": field_selector})
        return await self.request_json(
            "DELETE",
            gvr.api_path(namespace),
            params=params,
            body=_delete_options(propagation_policy, None, grace_period_seconds),
            timeout=self.list_timeout,
        )

    def watch(
        self,
        gvr: GroupVersionResource,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: int = 300,
        allow_watch_bookmarks: bool = True,
        send_initial_events: bool | None = None,
        resource_version_match: str | None = None,
        metadata_only: bool = False,
    ) -> WatchStream:
        """Open a watch (lazily: on `async with` / first iteration). Not rate-limited (informer watches).

        The server ends the stream after `timeout_seconds`; the client gives up when no byte arrives for
        `timeout_seconds + watch_read_margin` (a half-open connection would otherwise block forever).
        """
        params = _clean(
            {
                "watch": True,
                "resourceVersion": resource_version,
                "labelSelector": label_selector,
                "fieldSelector": field_selector,
                "timeoutSeconds": timeout_seconds,
                "allowWatchBookmarks": allow_watch_bookmarks or None,
                "sendInitialEvents": send_initial_events,
                "resourceVersionMatch": resource_version_match,
            }
        )
        timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=self.connect_timeout, sock_read=timeout_seconds + self.watch_read_margin
        )

        async def opener() -> aiohttp.ClientResponse:
            return await self._open(
                "GET",
                gvr.api_path(namespace),
                params=params,
                timeout=timeout,
                rate_limited=False,
                retry=False,
                accept=METADATA_ACCEPT if metadata_only else JSON,
            )

        return WatchStream(opener)


def _delete_options(
    propagation_policy: str | None, preconditions: dict[str, str] | None, grace_period_seconds: int | None
) -> dict[str, Any] | None:
    options: dict[str, Any] = {}
    if propagation_policy:
        options["propagationPolicy"] = propagation_policy
    if preconditions:
        options["preconditions"] = preconditions
    if grace_period_seconds is not None:
        options["gracePeriodSeconds"] = grace_period_seconds
    if not options:
        return None
    return {"kind": "DeleteOptions", "apiVersion": "v1", **options}


async def create_client(
    kubeconfig: str | None = None,
    master: str | None = None,
    *,
    qps: float = 20.0,
    burst: int = 30,
    context: str | None = None,
    **kwargs: Any,
) -> ApiClient:
    """Load the configuration (kubeconfig / master / in-cluster) and return a ready `ApiClient`."""
    config = await load_config(kubeconfig=kubeconfig, master=master, context=context)
    return ApiClient(config, qps=qps, burst=burst, **kwargs)
