"""The aiohttp application: routing of API paths to handlers, Status errors, and a fresh cluster's seed."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
import yaml
from aiohttp import web

from kubesim.api.context import ApiContext, error_response
from kubesim.api.request import Target, check_list_options, negotiate, parse_bool, resolve
from kubesim.auth.middleware import AUTH_KEY, refusal
from kubesim.auth.service import Auth
from kubesim.handlers.delete import delete_collection, delete_object
from kubesim.handlers.pods import bind_pod, evict_pod, pod_log
from kubesim.handlers.read import get_object, list_objects
from kubesim.handlers.reviews import create_review
from kubesim.handlers.scale import get_scale, write_scale
from kubesim.handlers.tokens import create_token
from kubesim.handlers.watch import watch_objects
from kubesim.handlers.write import create_object, patch_object, update_object
from kubesim.registry import crd
from kubesim.resources.types import SEED_NAMESPACES
from kubesim.server import audit, discovery, openapi
from kubesim.server.limits import LimitedApplication, closing, header_bytes_error, http_error, status_response
from kubesim.status import errors
from kubesim.storage.store import Store

log = logging.getLogger(__name__)
Handler = Callable[[ApiContext, web.Request, Target], Awaitable[web.StreamResponse]]
Middleware = audit.Middleware

VERSION = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.0-kubesim",
    "gitCommit": "0" * 40,
    "gitTreeState": "clean",
    "buildDate": "2024-12-11T00:00:00Z",
    "goVersion": "go1.23.4",
    "compiler": "gc",
    "platform": "linux/amd64",
}


def seed_cluster(store: Store) -> None:
    for name in SEED_NAMESPACES:
        if store.entry("namespaces", "", name) is None:
            store.create(
                "namespaces",
                {
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}},
                    "spec": {"finalizers": ["kubernetes"]},
                    "status": {"phase": "Active"},
                },
            )


def _pick(request: web.Request, target: Target) -> Handler:
    method, sub, named = request.method, target.subresource, bool(target.name)
    if (
        (target.rtype.review and (method != "POST" or named))
        or (sub in ("binding", "eviction", "token") and method != "POST")
        or (sub == "log" and method != "GET")
    ):
        raise errors.method_not_allowed()  # create-only
    if target.rtype.review:
        return create_review
    if sub == "token":
        return create_token
    if method == "GET":
        watch = target.legacy_watch or parse_bool(request.query.get("watch"), "watch")
        if not named or watch:
            check_list_options(request)
        if not named:
            return watch_objects if watch else list_objects
        if watch and not sub:
            return watch_objects  # a watch of one object: the collection filtered by name
        if sub == "log":
            return pod_log
        return get_scale if sub == "scale" else get_object
    if method == "POST" and not named:
        return create_object
    if method == "POST" and sub in ("binding", "eviction"):
        return bind_pod if sub == "binding" else evict_pod
    if method == "PUT" and named:
        return write_scale if sub == "scale" else update_object
    if method == "PATCH" and named:
        return write_scale if sub == "scale" else patch_object
    if method == "DELETE" and not sub:
        if not named and "deletecollection" not in target.rtype.verbs:
            raise errors.method_not_allowed()  # no route: 405, as for services upstream
        if not named:
            check_list_options(request)  # a deletecollection decodes ListOptions too
        return delete_object if named else delete_collection
    raise errors.method_not_allowed()


def _maybe_yaml(request: web.Request, response: web.StreamResponse) -> web.StreamResponse:
    """Answer in YAML when that is what the client prefers (watches stay JSON lines)."""
    if "yaml" not in request.headers.get("Accept", ""):
        return response  # the common case, decided without parsing the header
    if not isinstance(response, web.Response) or response.content_type != "application/json":
        return response
    try:
        wants_yaml = negotiate(request.headers.get("Accept")).yaml
    except errors.ApiError:
        return response
    if not wants_yaml or not isinstance(response.body, bytes):
        return response
    text = yaml.safe_dump(orjson.loads(response.body), sort_keys=False)
    converted = web.Response(text=text, status=response.status, content_type="application/yaml")
    for name in ("Warning", "Retry-After"):
        for value in response.headers.getall(name, []):
            converted.headers.add(name, value)
    return converted


def _api_handler(ctx: ApiContext) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    async def api(request: web.Request) -> web.StreamResponse:
        try:
            too_large = header_bytes_error(request)
            if too_large is not None:
                return closing(error_response(too_large))
            if request.method == "GET":
                answer = discovery.handle(ctx.registry, request)
                if answer is not None:
                    return answer
            target = resolve(ctx.registry, request.path)
            if target is None:
                raise errors.resource_not_found()
            response = await _pick(request, target)(ctx, request, target)
            return _maybe_yaml(request, response)
        except errors.ApiError as err:
            return _maybe_yaml(request, error_response(err))
        except ConnectionError:
            raise
        except web.HTTPException as exc:  # raised by aiohttp itself (a body past client_max_size...)
            if exc.status < 400:
                raise
            return error_response(http_error(exc))
        except Exception as exc:  # nothing a client sends may crash the server
            log.exception("request failed: %s %s", request.method, request.path_qs)
            return error_response(errors.internal(f"{type(exc).__name__}: {exc}"))

    return api


async def version(request: web.Request) -> web.Response:
    return web.Response(body=orjson.dumps(VERSION), content_type="application/json")


async def healthz(request: web.Request) -> web.Response:
    return web.Response(text="ok")


async def not_found(request: web.Request) -> web.Response:
    too_large = header_bytes_error(request)
    return closing(error_response(too_large)) if too_large else error_response(errors.resource_not_found())


def _kubesim_middleware(auth: Auth, faults: Any) -> Middleware:
    """What were three middlewares, in one (two awaits fewer per request, the same answers): aiohttp's own
    HTTP errors as Statuses (`status_response`, around the rest), then the injected faults (when `faults`, a
    kubesim.faults.injector.Faults, has rules), then authentication and authorization."""

    @web.middleware
    async def kubesim(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        try:
            if faults is not None and faults.active:
                injected: web.Response | None = await faults.screen(request)
                if injected is not None:
                    return injected
            refused = refusal(auth, request)
            return refused if refused is not None else await handler(request)
        except web.HTTPException as exc:
            if exc.status < 400:
                raise
            return status_response(exc)

    return kubesim


def build_app(ctx: ApiContext, faults: Any = None, auth: Auth | None = None) -> web.Application:
    """The application serving `ctx`; `faults` (a kubesim.faults.injector.Faults, or None) adds its middleware
    and its /kubesim/ routes; `auth` authenticates and authorizes (default: AlwaysAllow)."""
    auth = auth if auth is not None else Auth(ctx.store)
    # the audit log (if enabled) outermost: it records the code of every answer, injected faults included;
    # then aiohttp's own HTTP errors turned into Statuses, injected faults, authentication and authorization
    middlewares = [*audit.middlewares(), _kubesim_middleware(auth, faults)]
    app = LimitedApplication(middlewares=middlewares, client_max_size=ctx.max_body_bytes + 1024)
    app[AUTH_KEY] = auth
    crd.restore(ctx)
    crd.follow(ctx)
    if faults is not None:
        app.router.add_routes(faults.routes)
    # go-restful serves the /version web service's root route on both spellings (the official Python client
    # asks "/version/"); /healthz, /livez, /readyz and /openapi/v2 are exact paths: a slash is a 404
    for path in ("/version", "/version/"):
        app.router.add_get(path, version)
    for path in ("/healthz", "/livez", "/readyz"):
        app.router.add_get(path, healthz)
    openapi.add_routes(app, ctx.registry)
    handler = _api_handler(ctx)
    for prefix in ("/api", "/apis"):
        app.router.add_route("*", prefix, handler)
        app.serve_directly(prefix + "/", app.router.add_route("*", prefix + "/{tail:.*}", handler))
    app.router.add_route("*", "/{tail:.*}", not_found)
    return app
