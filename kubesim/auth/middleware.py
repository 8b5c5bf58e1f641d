"""The aiohttp middleware: authenticate every request (bearer token, client certificate, else anonymous),
apply impersonation headers, then authorize it (RBAC mode). The review APIs read the user it leaves."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

from kubesim.api.context import error_response
from kubesim.auth.attributes import Attributes, request_attributes
from kubesim.auth.authn import ADMIN_USER, certificate_user
from kubesim.auth.service import PUBLIC_PATHS, Auth, forbidden, impersonation_attributes, unauthorized
from kubesim.auth.user import (
    ANONYMOUS,
    ANONYMOUS_USER,
    AUTHENTICATED,
    UNAUTHENTICATED,
    UserInfo,
    authenticated,
    service_account_groups,
    split_service_account,
    with_group,
)
from kubesim.status import errors

AUTH_KEY = web.AppKey("kubesim.auth", Auth)
USER_KEY = web.RequestKey("kubesim.user", UserInfo)
EXTRA_PREFIX = "impersonate-extra-"
_I_BYTES = (ord("I"), ord("i"))
AUTHENTICATED_ADMIN = authenticated(ADMIN_USER)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def request_user(request: web.Request) -> UserInfo:
    """Who sent `request` (anonymous when the middleware did not run)."""
    user = request.get(USER_KEY)
    return user if user is not None else ANONYMOUS_USER


def _authenticate(auth: Auth, request: web.Request, enforcing: bool) -> UserInfo:
    authorization = request.headers.get("Authorization")
    sent, user = auth.authenticator.bearer(authorization) if authorization else (False, None)
    if user is not None:
        return user
    if sent and enforcing:
        raise unauthorized()
    transport = request.transport
    if not sent and transport is not None:
        peercert = transport.get_extra_info("peercert")  # None without TLS: no call for the usual request
        user = certificate_user(peercert) if peercert is not None else None
        if user is not None:
            return user
    if not enforcing:
        return AUTHENTICATED_ADMIN  # kubesim's AlwaysAllow: whoever sends nothing acts as its admin
    if not auth.anonymous and request.path not in PUBLIC_PATHS:
        raise unauthorized()
    return ANONYMOUS_USER


def _asks_impersonation(request: web.Request) -> bool:
    """Any Impersonate-* header: one pass over the raw names (the common answer, no, on every request)."""
    for name, _ in request.raw_headers:
        # the first byte (an int, no copy) rules out nearly every other header before a slice and lower()
        if name and name[0] in _I_BYTES and name[:12].lower() == b"impersonate-":
            return True
    return False


def _impersonate(auth: Auth, request: web.Request, actual: UserInfo) -> UserInfo:
    if not _asks_impersonation(request):
        return actual
    headers = request.headers
    name = headers.get("Impersonate-User", "")
    groups = tuple(headers.getall("Impersonate-Group", []))
    uid = headers.get("Impersonate-Uid", "")
    extra: dict[str, tuple[str, ...]] = {}
    for key in {k.lower() for k in headers if k.lower().startswith(EXTRA_PREFIX)}:
        extra[key[len(EXTRA_PREFIX) :]] = tuple(headers.getall(key))
    if not name:
        if groups or uid or extra:
            raise errors.internal(
                "requested impersonation of groups, a uid or extras without impersonating a user"
            )
        return actual
    checks = [impersonation_attributes("user", name)]
    checks += [impersonation_attributes("group", group) for group in groups]
    if uid:
        checks.append(impersonation_attributes("uid", uid))
    for key, values in extra.items():
        checks += [
            Attributes(
                "impersonate", group="authentication.k8s.io", resource="userextras", subresource=key, name=v
            )
            for v in values
        ]
    for attrs in checks:
        if not auth.authorize(actual, attrs)[0]:
            raise forbidden(actual, attrs)
    account = split_service_account(name)
    if account is not None and not groups:
        groups = service_account_groups(account[0])
    if name == ANONYMOUS:
        groups = with_group(groups, UNAUTHENTICATED)
    elif UNAUTHENTICATED not in groups:
        groups = with_group(groups, AUTHENTICATED)
    return UserInfo(name, uid, groups, extra)


def refusal(auth: Auth, request: web.Request) -> web.Response | None:
    """Authenticate `request` (its user left under USER_KEY) and authorize it: the error answering it, or
    None when it may go on."""
    enforcing = auth.enforcing
    try:
        user = _impersonate(auth, request, _authenticate(auth, request, enforcing))
        request[USER_KEY] = user
        if enforcing:
            auth.check(user, request_attributes(request.method, request.path, request.query))
    except errors.ApiError as err:
        return error_response(err)
    return None
