"""HTTP-level limits as kube-apiserver's Go net/http server has them, and a `Status` body for every request
aiohttp refuses before it reaches the application (a malformed request line, headers past the limits).

Go's server reads at most `http.DefaultMaxHeaderBytes` (1 MiB; kube-apiserver's secure serving sets the
same `MaxHeaderBytes`) of request line and headers together, and answers 431 Request Header Fields Too Large
past it. aiohttp's defaults are much smaller (8190 bytes per line or field, 128 headers), so a long label
selector in the URL failed with a plain-text 400. Here a line or one field may be 1 MiB and the request may
carry many headers; the total is checked by the application (`header_bytes_error`), as aiohttp does not
count it. What aiohttp still refuses gets a `Status` instead of its plain text."""

from __future__ import annotations

import warnings
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import orjson
from aiohttp import hdrs, web, web_protocol
from aiohttp.http_exceptions import BadHttpMessage, LineTooLong
from aiohttp.web_request import BaseRequest
from aiohttp.web_server import Server
from aiohttp.web_urldispatcher import AbstractRoute, Resource, ResourceRoute, UrlMappingMatchInfo

from kubesim.server import fastwrite
from kubesim.status import errors

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
MAX_HEADER_BYTES = 1 << 20  # Go net/http DefaultMaxHeaderBytes
HANDLER_LIMITS: dict[str, int] = {
    "max_line_size": MAX_HEADER_BYTES,
    "max_field_size": MAX_HEADER_BYTES,
    "max_headers": 1 << 15,  # Go counts bytes, not headers; this only bounds aiohttp's per-header work
}
TOO_LARGE = "Request Header Fields Too Large"
_FAST_WRITE = fastwrite.supported()
_MATCHES = 4096  # raw paths whose direct match is remembered (a collection's path repeats; objects' vary)


def header_fields_too_large(detail: str) -> errors.ApiError:
    """431, as Go's server answers a request whose line and headers exceed MaxHeaderBytes."""
    return errors.ApiError(431, "RequestHeaderFieldsTooLarge", f"{TOO_LARGE}: {detail}")


def header_bytes_error(request: web.BaseRequest) -> errors.ApiError | None:
    """The total of the request line and headers past MAX_HEADER_BYTES (each part passed aiohttp alone)."""
    raw_headers = request.raw_headers
    total = len(request.raw_path) + 4 * len(raw_headers)  # ": " and CRLF per header
    for name, value in raw_headers:  # a plain loop: sum() over a generator costs twice as much, per request
        total += len(name) + len(value)
    if total <= MAX_HEADER_BYTES:
        return None
    return header_fields_too_large(f"{total} bytes of request line and headers (limit {MAX_HEADER_BYTES})")


def closing(response: web.Response) -> web.Response:
    """Go's server closes the connection after a 431: it has stopped reading the request."""
    response.force_close()
    return response


def http_error(exc: web.HTTPException) -> errors.ApiError:
    """The Status for an error aiohttp raised itself (no route for a CONNECT or `*` target, a body past
    client_max_size...): its code, its reason phrase as a Kubernetes-style reason."""
    if exc.status == 404:
        return errors.resource_not_found()
    text = exc.text if exc.text and not exc.text.startswith(f"{exc.status}: ") else exc.reason
    return errors.ApiError(exc.status, exc.reason.replace(" ", ""), text)


def status_response(exc: web.HTTPException) -> web.Response:
    """An HTTP error aiohttp raised (400 or above) as a `Status` body rather than plain text."""
    return web.Response(
        body=orjson.dumps(http_error(exc).status()), status=exc.status, content_type="application/json"
    )


def protocol_error(status: int, exc: BaseException | None) -> errors.ApiError:
    """The ApiError for a request aiohttp could not parse or serve."""
    if isinstance(exc, LineTooLong) or (
        isinstance(exc, BadHttpMessage) and "Too many headers" in str(exc.message)
    ):
        what = "too many header fields" if not isinstance(exc, LineTooLong) else "a line past the limit"
        return header_fields_too_large(
            f"{what} (at most {MAX_HEADER_BYTES} bytes of request line and headers)"
        )
    if status >= 500:
        return errors.internal("the server could not serve the request")
    message = getattr(exc, "message", None) or str(exc or "malformed HTTP request")
    first_line = str(message).splitlines()[0][:200].rstrip(": ") if str(message) else "unparsable"
    return errors.bad_request(f"malformed HTTP request: {first_line}")


class StatusRequestHandler(web_protocol.RequestHandler):
    """aiohttp's protocol handler, answering its own errors with a `Status` instead of plain text, and
    sending plain responses through `fastwrite` (the same bytes, less work per request)."""

    async def finish_response(
        self, request: BaseRequest, resp: web.StreamResponse, start_time: float | None
    ) -> tuple[web.StreamResponse, bool]:
        if (
            not _FAST_WRITE
            or self._logging_enabled
            or self._upgraded
            or not fastwrite.sendable(request, resp)
        ):
            return await super().finish_response(request, resp, start_time)
        request._finish()
        try:
            if not fastwrite.send_usual(request, resp):  # type: ignore[arg-type]
                await fastwrite.send(request, resp)  # type: ignore[arg-type]
            elif self.writing_paused:
                await request._payload_writer.drain()
        except ConnectionError:
            return resp, True
        return resp, False

    def handle_error(
        self,
        request: BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        if request.writer.output_size > 0:  # part of a response is out: the connection is broken
            raise ConnectionError("response already sent, cannot send the error")
        if status >= 500:
            self.log_exception("Error handling request from %s", request.remote, exc_info=exc)
        else:
            self.logger.debug("refused a malformed request from %s: %s", request.remote, exc)
        err = protocol_error(status, exc)
        response = web.Response(
            body=orjson.dumps(err.status()), status=err.code, content_type="application/json"
        )
        response.force_close()  # the parser's state is unknown after an error: close, as aiohttp does
        return response


class StatusServer(Server):
    def __call__(self) -> web_protocol.RequestHandler:
        return StatusRequestHandler(self, loop=self._loop, **self._kwargs)


with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)  # aiohttp discourages subclassing; this is the hook

    class LimitedApplication(web.Application):
        """An Application whose server uses HANDLER_LIMITS and answers protocol errors with a Status; the
        routes given to `serve_directly` skip the URL dispatcher's walk (see `_handle`)."""

        ATTRS = web.Application.ATTRS | {"_direct", "_chains", "_matches"}

        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self._direct: tuple[tuple[str, ResourceRoute], ...] = ()
            self._chains: dict[ResourceRoute, Handler] = {}
            self._matches: dict[str, tuple[Handler, UrlMappingMatchInfo]] = {}

        def serve_directly(self, prefix: str, route: AbstractRoute) -> None:
            """Every path starting with `prefix` resolves to `route` (a `prefix{tail:.*}` route for any
            method, that no other resource shadows): the caller's promise, which lets `_handle` go straight
            to it."""
            assert isinstance(route, ResourceRoute) and route.method == hdrs.METH_ANY
            self._direct += ((prefix, route),)

        def _make_handler(self, **kwargs: Any) -> Server:
            server = super()._make_handler(**{**HANDLER_LIMITS, **kwargs})
            server.__class__ = StatusServer  # same state; only the protocol handler class differs
            return server

        async def _handle(self, request: web.Request) -> web.StreamResponse:
            # The API paths, nearly every request: the dispatcher would walk the path's prefixes back to
            # /api or /apis and try the resources there in turn, and aiohttp would add a middleware that
            # only re-sets the current app (this one already: no sub-applications). Same match info, same
            # middlewares, without both. Anything unusual (no match, Expect:) takes aiohttp's own path.
            if request.headers.get(hdrs.EXPECT) or self._has_legacy_middlewares:
                return await super()._handle(request)
            raw_path = request.rel_url.raw_path
            known = self._matches.get(raw_path)
            if known is None:
                known = self._match(request)
                if known is None:
                    return await super()._handle(request)
                if len(self._matches) >= _MATCHES:
                    self._matches.clear()
                self._matches[raw_path] = known
            chain, request._match_info = known
            return await chain(request)

        def _match(self, request: web.Request) -> tuple[Handler, UrlMappingMatchInfo] | None:
            """The handler chain and the frozen match info of a path served directly; None for any other.
            Both depend on the raw path alone, so they are remembered by it: the match info is frozen
            (read-only) and holds nothing of a request, so requests for one path can share it."""
            path = request.rel_url.path_safe
            route = None
            for prefix, direct in self._direct:
                if path.startswith(prefix):
                    route = direct
                    break
            if route is None:
                return None
            resource = route.resource
            match_dict = resource._match(path) if isinstance(resource, Resource) else None
            if match_dict is None:
                return None
            match_info = UrlMappingMatchInfo(match_dict, route)
            match_info.add_app(self)
            match_info.freeze()
            chain = self._chains.get(route)
            if chain is None:
                chain = self._chains[route] = self._chain(route.handler)
            return chain, match_info

        def _chain(self, handler: Handler) -> Handler:
            """`handler` inside this application's middlewares, outermost first, as aiohttp nests them."""
            for middleware in reversed(self._middlewares):
                handler = partial(middleware, handler=handler)
            return handler
