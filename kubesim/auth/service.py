"""`Auth`: the authentication and authorization a kubesim server applies, per `--authorization-mode`, and the
errors it answers with (upstream's 401 and its Forbidden wording)."""

from __future__ import annotations

from kubesim.auth import aggregation
from kubesim.auth.attributes import Attributes
from kubesim.auth.authn import Authenticator
from kubesim.auth.bootstrap import seed_rbac
from kubesim.auth.rbac import RbacAuthorizer
from kubesim.auth.user import UserInfo, split_service_account
from kubesim.status import errors
from kubesim.storage.store import Store

ALWAYS_ALLOW = "AlwaysAllow"
RBAC_MODE = "RBAC"
MODES = (ALWAYS_ALLOW, RBAC_MODE)
PUBLIC_PATHS = frozenset(("/healthz", "/livez", "/readyz", "/version", "/version/"))


class Auth:
    """In RBAC mode requests are authorized against the stored RBAC objects, bad credentials get 401 and
    none make the request anonymous (401 too when `anonymous` is off, but for the health paths). In
    AlwaysAllow mode (kubesim's default) everything is allowed and a request without valid credentials acts
    as kubesim's admin, as before kubesim authenticated anyone (kubectl sends no token over plain HTTP)."""

    def __init__(
        self,
        store: Store,
        mode: str = ALWAYS_ALLOW,
        authenticator: Authenticator | None = None,
        anonymous: bool = True,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown authorization mode {mode!r}: want one of {', '.join(MODES)}")
        self.mode = mode
        self.anonymous = anonymous
        self.authenticator = authenticator or Authenticator(store)
        seed_rbac(store)
        aggregation.aggregate_all(store)
        self._aggregation = aggregation.follow(store)
        self.rbac = RbacAuthorizer(store)

    @property
    def enforcing(self) -> bool:
        return self.mode == RBAC_MODE

    def close(self) -> None:
        self._aggregation.close()
        self.rbac.close()

    def authorize(self, user: UserInfo, attrs: Attributes) -> tuple[bool, str]:
        if not self.enforcing:
            return True, ""
        return self.rbac.authorize(user, attrs)

    def check(self, user: UserInfo, attrs: Attributes) -> None:
        """Raise upstream's 403 unless `user` may do `attrs`."""
        allowed, _ = self.authorize(user, attrs)
        if not allowed:
            raise forbidden(user, attrs)


def forbidden_message(user: UserInfo, attrs: Attributes) -> str:
    if not attrs.resource_request:
        return f'User "{user.name}" cannot {attrs.verb} path "{attrs.path}"'
    resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    where = f'in the namespace "{attrs.namespace}"' if attrs.namespace else "at the cluster scope"
    return (
        f'User "{user.name}" cannot {attrs.verb} resource "{resource}" in API group "{attrs.group}" {where}'
    )


def forbidden(user: UserInfo, attrs: Attributes) -> errors.ApiError:
    """Upstream's NewForbidden around forbiddenMessage."""
    why = forbidden_message(user, attrs)
    if not attrs.resource_request or not attrs.resource:
        return errors.ApiError(403, "Forbidden", f"forbidden: {why}", {})
    what = errors.qualified(attrs.resource, attrs.group)
    message = f'{what} "{attrs.name}" is forbidden: {why}' if attrs.name else f"{what} is forbidden: {why}"
    details = {"name": attrs.name} if attrs.name else {}
    if attrs.group:
        details["group"] = attrs.group
    details["kind"] = attrs.resource
    return errors.ApiError(403, "Forbidden", message, details)


def unauthorized() -> errors.ApiError:
    return errors.ApiError(401, "Unauthorized", "Unauthorized")


def impersonation_attributes(kind: str, value: str) -> Attributes:
    """What impersonating a user, group or uid asks for (upstream `plugin/pkg/authenticator/../impersonation`:
    the `impersonate` verb; a service account's user name is checked as that service account)."""
    if kind == "user":
        account = split_service_account(value)
        if account is not None:
            return Attributes(
                "impersonate", resource="serviceaccounts", namespace=account[0], name=account[1]
            )
        return Attributes("impersonate", resource="users", name=value)
    if kind == "uid":
        return Attributes("impersonate", group="authentication.k8s.io", resource="uids", name=value)
    return Attributes("impersonate", resource="groups", name=value)
