"""The authenticated identity of a request (upstream `k8s.io/apiserver/pkg/authentication/user.Info`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ANONYMOUS = "system:anonymous"
AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"
MASTERS = "system:masters"
SERVICE_ACCOUNTS = "system:serviceaccounts"
SA_PREFIX = "system:serviceaccount:"


@dataclass(frozen=True)
class UserInfo:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: dict[str, tuple[str, ...]] = field(default_factory=dict, compare=False, hash=False)

    def to_json(self) -> dict[str, Any]:
        """The authentication.k8s.io/v1 UserInfo (TokenReview, SelfSubjectReview)."""
        out: dict[str, Any] = {"username": self.name}
        if self.uid:
            out["uid"] = self.uid
        if self.groups:
            out["groups"] = list(self.groups)
        if self.extra:
            out["extra"] = {k: list(v) for k, v in self.extra.items()}
        return out


def with_group(groups: tuple[str, ...], group: str) -> tuple[str, ...]:
    return groups if group in groups else (*groups, group)


def authenticated(user: UserInfo) -> UserInfo:
    """An authenticated user is always in system:authenticated (upstream's AuthenticatedGroupAdder)."""
    return UserInfo(user.name, user.uid, with_group(user.groups, AUTHENTICATED), user.extra)


ANONYMOUS_USER = UserInfo(ANONYMOUS, groups=(UNAUTHENTICATED,))


def service_account_username(namespace: str, name: str) -> str:
    return f"{SA_PREFIX}{namespace}:{name}"


def split_service_account(username: str) -> tuple[str, str] | None:
    """(namespace, name) of a service account's username, or None for any other user."""
    if not username.startswith(SA_PREFIX):
        return None
    parts = username[len(SA_PREFIX) :].split(":")
    if len(parts) != 2 or not parts[0] or not parts[1]:
        return None
    return parts[0], parts[1]


def service_account_groups(namespace: str) -> tuple[str, ...]:
    return (SERVICE_ACCOUNTS, f"{SERVICE_ACCOUNTS}:{namespace}")


def service_account_user(namespace: str, name: str, uid: str = "") -> UserInfo:
    return UserInfo(
        service_account_username(namespace, name),
        uid,
        (*service_account_groups(namespace), AUTHENTICATED),
    )
