"""The manager's HTTP server: health endpoints, Prometheus metrics and /debug/controllers.

Routes: ``/healthz``, ``/livez``, ``/readyz`` (``?verbose``, repeatable ``?exclude=name``),
``/<endpoint>/<check>`` for one check (its reason is shown there, as Kubernetes does), ``/metrics``
(prometheus_client's default REGISTRY, with the process, platform and GC collectors) and
``/debug/controllers`` (JSON). Anything else is 404. With secure serving (the default,
`HttpServer.from_settings`): HTTPS, and every path but --authorization-always-allow-paths needs a user the
API server authorizes (manager/lifecycle/secure); the deprecated --port serves plain HTTP without
authentication instead. Extra routes (e.g. the cluster wiring's own debug pages) may be added with
:meth:`HttpServer.add_get` before :meth:`HttpServer.start`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import orjson
import structlog
from aiohttp import web
from aiohttp.http_exceptions import BadHttpMessage
from prometheus_client import REGISTRY
from prometheus_client.exposition import choose_encoder

from manager.lifecycle.healthz import ENDPOINTS, HealthChecks
from manager.lifecycle.secure import DelegatedAuth, ReviewClient, ServingTLS, delegated_auth_middleware

log = structlog.get_logger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_TEXT_HEADERS = {"X-Content-Type-Options": "nosniff"}


class _MalformedRequestsAtDebug(logging.Logger):
    """aiohttp's server logger, except that a malformed request (an oversized header, garbage bytes) is
    logged at debug level: aiohttp logs each with a traceback as an error, which anyone able to connect could
    fill the log with. Errors of our own handlers stay errors."""

    def __init__(self) -> None:
        super().__init__("aiohttp.server.requests")
        self.parent = logging.getLogger("aiohttp.server")

    def exception(self, msg: object, *args: object, exc_info: Any = True, **kwargs: Any) -> None:
        if isinstance(exc_info, BadHttpMessage):
            self.debug(msg, *args, exc_info=exc_info, **kwargs)
        else:
            super().exception(msg, *args, exc_info=exc_info, **kwargs)


class ServerBindError(Exception):
    """The server cannot listen on the requested address (port in use, bad address, no permission)."""


class HttpServer:
    """aiohttp server; after :meth:`start`, :attr:`host` and :attr:`port` hold the bound address."""

    def __init__(
        self,
        health: HealthChecks,
        bind_address: str,
        port: int,
        debug_controllers: Callable[[], Mapping[str, Any]] = dict,
        *,
        tls: ServingTLS | None = None,
        auth: DelegatedAuth | None = None,
        always_allow_paths: Sequence[str] = ("/healthz", "/readyz", "/livez"),
    ) -> None:
        self.health = health
        self.bind_address, self.requested_port = bind_address, port
        self.host, self.port = bind_address, port  # the bound address once started
        self.tls, self.auth = tls, auth
        self._debug_controllers = debug_controllers
        middlewares = [delegated_auth_middleware(auth, always_allow_paths)] if auth is not None else []
        self._app = web.Application(middlewares=middlewares)
        self._runner: web.AppRunner | None = None
        for endpoint in ENDPOINTS:
            self._app.router.add_get(f"/{endpoint}", self._aggregate(endpoint))
            self._app.router.add_get(f"/{endpoint}/{{check}}", self._single(endpoint))
        self._app.router.add_get("/metrics", self._metrics)
        self._app.router.add_get("/debug/controllers", self._debug)

    @classmethod
    def from_settings(
        cls, health: HealthChecks, settings: Any, debug_controllers: Callable[[], Mapping[str, Any]] = dict
    ) -> HttpServer:
        """HTTPS with delegated auth on --secure-port; plain HTTP on the deprecated --port when it is set."""
        if settings.port is not None:
            log.warning(
                "--port is deprecated: serving plain HTTP without authentication; use --secure-port",
                port=settings.port,
            )
            return cls(health, settings.bind_address, settings.port, debug_controllers)
        return cls(
            health,
            settings.bind_address,
            settings.secure_port,
            debug_controllers,
            tls=ServingTLS.from_settings(settings),
            auth=DelegatedAuth.from_settings(settings),
            always_allow_paths=settings.authorization_always_allow_paths,
        )

    def delegate_reviews_to(self, client: ReviewClient) -> None:
        """The API client TokenReviews and SubjectAccessReviews are posted with (set by the cluster wiring);
        until then only the always-allowed paths are served."""
        if self.auth is not None:
            self.auth.client = client

    def add_get(self, path: str, handler: Handler) -> None:
        """Serve an extra GET route; only before start()."""
        self._app.router.add_get(path, handler)

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        if ":" in host:
            host = f"[{host}]"
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}"

    async def start(self) -> None:
        # No access log: probes arrive every few seconds and would drown everything else.
        runner = web.AppRunner(
            self._app, access_log=None, handle_signals=False, logger=_MalformedRequestsAtDebug()
        )
        await runner.setup()
        site = web.TCPSite(
            runner,
            self.bind_address,
            self.requested_port,
            reuse_address=True,
            ssl_context=self.tls.context if self.tls else None,
        )
        try:
            await site.start()
        except OSError as exc:
            await runner.cleanup()
            # aiohttp rewraps bind errors with a long message; the errno's own text is the clear part.
            reason = os.strerror(exc.errno) if exc.errno and exc.errno > 0 else exc.strerror or str(exc)
            raise ServerBindError(
                f"cannot listen on {self.bind_address}:{self.requested_port}: {reason}"
            ) from None
        self._runner = runner
        sockname = runner.addresses[0]
        self.host, self.port = str(sockname[0]), int(sockname[1])
        if self.tls is not None:
            self.tls.start()
        log.info("serving health and metrics", address=f"{self.host}:{self.port}", url=self.url)

    async def stop(self) -> None:
        if self.tls is not None:
            await self.tls.stop()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def _aggregate(self, endpoint: str) -> Handler:
        async def handle(request: web.Request) -> web.Response:
            report = await self.health.evaluate(endpoint, request.query.getall("exclude", []))
            return web.Response(
                status=200 if report.passed else 500,
                text=report.body(verbose="verbose" in request.query),
                headers=_TEXT_HEADERS,
            )

        return handle

    def _single(self, endpoint: str) -> Handler:
        async def handle(request: web.Request) -> web.Response:
            name = request.match_info["check"]
            if not self.health.has(name, endpoint):
                raise web.HTTPNotFound()
            reason = await self.health.run_one(name)
            if reason is None:
                return web.Response(text="ok", headers=_TEXT_HEADERS)
            body = f"internal server error: {reason}\n"
            return web.Response(status=500, text=body, headers=_TEXT_HEADERS)

        return handle

    async def _metrics(self, request: web.Request) -> web.Response:
        encoder, content_type = choose_encoder(request.headers.get("Accept", ""))
        return web.Response(body=encoder(REGISTRY), headers={"Content-Type": content_type})

    async def _debug(self, request: web.Request) -> web.Response:
        body = orjson.dumps(self._debug_controllers(), option=orjson.OPT_INDENT_2)
        return web.Response(body=body, content_type="application/json")
