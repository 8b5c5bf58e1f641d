"""The aiohttp middleware in front of every route of the secure port: paths of
--authorization-always-allow-paths pass as they are; any other request is authenticated (client
certificate, bearer token, else anonymous) and authorized, and refused with the Status bodies the API
server's filters write: 401 ``Unauthorized`` for a token the API server refuses, 403 ``forbidden: User "u"
cannot get path "/p"`` for a user without the right, 500 when a SubjectAccessReview cannot be made.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

import orjson
import structlog
from aiohttp import web
from aiohttp.typedefs import Middleware

from manager.lifecycle.secure.delegated import (
    ANONYMOUS,
    DelegatedAuth,
    ReviewUnavailable,
    UserInfo,
    user_of_certificate,
)

log = structlog.get_logger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Unauthenticated(Exception):
    """The request carries credentials that are not valid."""


def path_matcher(patterns: Sequence[str]) -> Callable[[str], bool]:
    """apiserver's path authorizer: an exact path, or a prefix when the pattern ends with ``*``."""
    exact = {p for p in patterns if not p.endswith("*")}
    prefixes = tuple(p[:-1] for p in patterns if p.endswith("*"))
    return lambda path: path in exact or (bool(prefixes) and path.startswith(prefixes))


def status_response(code: int, reason: str, message: str) -> web.Response:
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    return web.Response(
        status=code,
        body=orjson.dumps(body),
        content_type="application/json",
        headers={"X-Content-Type-Options": "nosniff"},
    )


def bearer_token(request: web.Request) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header; None without one (the request is then
    anonymous, as apiserver's bearer token authenticator has no opinion on it)."""
    scheme, _, token = request.headers.get("Authorization", "").strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


async def authenticate(request: web.Request, auth: DelegatedAuth) -> UserInfo:
    peercert = request.transport.get_extra_info("peercert") if request.transport is not None else None
    if peercert:  # only present once verified against --client-ca-file
        user = user_of_certificate(peercert)
        if user is not None:
            return user
    token = bearer_token(request)
    if token is None:
        return ANONYMOUS
    try:
        user = await auth.authenticate_token(token)
    except ReviewUnavailable as exc:
        log.warning("token not reviewed; refusing the request", path=request.path, error=str(exc))
        raise Unauthenticated() from None
    if user is None:
        raise Unauthenticated()
    return user


def delegated_auth_middleware(auth: DelegatedAuth, always_allow_paths: Sequence[str]) -> Middleware:
    always_allowed = path_matcher(always_allow_paths)

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        if always_allowed(request.path):
            return await handler(request)
        try:
            user = await authenticate(request, auth)
        except Unauthenticated:
            return status_response(401, "Unauthorized", "Unauthorized")
        verb = request.method.lower()
        try:
            decision = await auth.authorize(user, verb, request.path)
        except ReviewUnavailable as exc:
            log.warning("request not authorized: review failed", path=request.path, error=str(exc))
            return status_response(500, "InternalError", f"Internal Server Error: {request.path!r}")
        if not decision.allowed:
            message = f'forbidden: User "{user.name}" cannot {verb} path "{request.path}"'
            if decision.reason:
                message += f": {orjson.dumps(decision.reason).decode()}"
            return status_response(403, "Forbidden", message)
        return await handler(request)

    return middleware
