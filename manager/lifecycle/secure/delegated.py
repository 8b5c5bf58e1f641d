"""Delegated authentication and authorization, as kube-controller-manager's secure port does it: bearer
tokens are reviewed by the API server (TokenReview, authentication.k8s.io/v1), client certificates
checked against --client-ca-file, a request with neither is ``system:anonymous``; every request is then
authorized by a SubjectAccessReview (authorization.k8s.io/v1) on its non-resource path and verb. Both
answers are cached for the --authentication-token-webhook-cache-ttl / --authorization-webhook-cache-*-ttl
durations (apiserver's ``DelegatingAuthenticationOptions`` / ``DelegatingAuthorizationOptions``); failed
reviews are not cached.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
SUBJECT_ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
AUTHENTICATED, UNAUTHENTICATED = "system:authenticated", "system:unauthenticated"
# Allowed without asking, as apiserver's DelegatingAuthorizationOptions.AlwaysAllowGroups.
ALWAYS_ALLOW_GROUPS = frozenset({"system:masters"})
CACHE_SIZE = 4096
# A review's whole time, retries included (apiserver's delegated options: a 10 s client timeout); the
# request waits that long at most when the API server does not answer.
REVIEW_TIMEOUT = 10.0

V = TypeVar("V")


class ReviewClient(Protocol):
    """What posting a review needs of the API client (manager.client.rest.ApiClient has it)."""

    async def request_json(self, method: str, path: str, *, body: object | None = None) -> dict[str, Any]: ...


class ReviewUnavailable(Exception):
    """No API server to ask (a manager without cluster wiring) or the review request failed."""


@dataclass(frozen=True)
class UserInfo:
    name: str
    groups: tuple[str, ...] = ()
    uid: str = ""
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict, compare=False, hash=False)

    def with_authenticated_group(self) -> UserInfo:
        """Add system:authenticated, as apiserver's AuthenticatedGroupAdder does for non-anonymous users."""
        if AUTHENTICATED in self.groups:
            return self
        return UserInfo(self.name, (*self.groups, AUTHENTICATED), self.uid, self.extra)


ANONYMOUS = UserInfo("system:anonymous", (UNAUTHENTICATED,))


class TTLCache(Generic[V]):
    """A bounded cache whose entries expire; each `put` gives its own time to live."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, size: int = CACHE_SIZE) -> None:
        self._clock = clock
        self._size = size
        self._entries: dict[Any, tuple[float, V]] = {}

    def get(self, key: Any) -> V | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry[0] <= self._clock():
            del self._entries[key]
            return None
        return entry[1]

    def put(self, key: Any, value: V, ttl: float) -> None:
        if ttl <= 0:
            return
        self._entries.pop(key, None)
        if len(self._entries) >= self._size:
            now = self._clock()
            self._entries = {k: e for k, e in self._entries.items() if e[0] > now}
            while len(self._entries) >= self._size:  # still full of live entries: drop the oldest
                del self._entries[next(iter(self._entries))]
        self._entries[key] = (self._clock() + ttl, value)

    def __len__(self) -> int:
        return len(self._entries)


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str = ""


class DelegatedAuth:
    """Asks the API server who a token is and whether a user may use a path; caches the answers."""

    def __init__(
        self,
        *,
        token_ttl: float = 10.0,
        authorized_ttl: float = 10.0,
        unauthorized_ttl: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
        review_timeout: float = REVIEW_TIMEOUT,
    ) -> None:
        self.client: ReviewClient | None = None
        self.review_timeout = review_timeout
        self.token_ttl = token_ttl
        self.authorized_ttl, self.unauthorized_ttl = authorized_ttl, unauthorized_ttl
        self._tokens: TTLCache[tuple[UserInfo | None]] = TTLCache(clock)  # (None,): the token was refused
        self._decisions: TTLCache[Decision] = TTLCache(clock)
        self.reviews_sent = 0  # TokenReviews and SubjectAccessReviews posted (the caches' misses)

    @classmethod
    def from_settings(cls, settings: Any, clock: Callable[[], float] = time.monotonic) -> DelegatedAuth:
        return cls(
            token_ttl=settings.authentication_token_webhook_cache_ttl,
            authorized_ttl=settings.authorization_webhook_cache_authorized_ttl,
            unauthorized_ttl=settings.authorization_webhook_cache_unauthorized_ttl,
            clock=clock,
        )

    async def authenticate_token(self, token: str) -> UserInfo | None:
        """The user the API server says the token belongs to, or None if it refuses the token."""
        key = hashlib.sha256(token.encode()).digest()  # no token kept in memory
        cached = self._tokens.get(key)
        if cached is not None:
            return cached[0]
        review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}
        status = (await self._post(TOKEN_REVIEWS, review)).get("status") or {}
        user = _user_of(status.get("user") or {}) if status.get("authenticated") is True else None
        self._tokens.put(key, (user,), self.token_ttl)
        return user

    async def authorize(self, user: UserInfo, verb: str, path: str) -> Decision:
        """Whether `user` may `verb` the non-resource URL `path`."""
        if ALWAYS_ALLOW_GROUPS.intersection(user.groups):
            return Decision(True, "always allowed group")
        key = (user, verb, path)
        cached = self._decisions.get(key)
        if cached is not None:
            return cached
        spec: dict[str, Any] = {
            "user": user.name,
            "groups": list(user.groups),
            "nonResourceAttributes": {"path": path, "verb": verb},
        }
        if user.uid:
            spec["uid"] = user.uid
        if user.extra:
            spec["extra"] = {k: list(v) for k, v in user.extra.items()}
        review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}
        status = (await self._post(SUBJECT_ACCESS_REVIEWS, review)).get("status") or {}
        allowed = status.get("allowed") is True and status.get("denied") is not True
        decision = Decision(allowed, str(status.get("reason") or status.get("evaluationError") or ""))
        self._decisions.put(key, decision, self.authorized_ttl if allowed else self.unauthorized_ttl)
        return decision

    async def _post(self, path: str, review: dict[str, Any]) -> dict[str, Any]:
        if self.client is None:
            raise ReviewUnavailable("no API server to review with (no cluster wiring in this manager)")
        self.reviews_sent += 1
        try:
            async with asyncio.timeout(self.review_timeout):
                return await self.client.request_json("POST", path, body=review)
        except TimeoutError:
            raise ReviewUnavailable(f"{review['kind']} timed out after {self.review_timeout}s") from None
        except Exception as exc:  # any client error: the request is refused, the server goes on
            raise ReviewUnavailable(f"{review['kind']} failed: {exc}") from exc


def _user_of(raw: Mapping[str, Any]) -> UserInfo | None:
    name = raw.get("username")
    if not isinstance(name, str) or not name:
        return None
    groups = tuple(str(g) for g in raw.get("groups") or () if isinstance(g, str))
    extra_raw = raw.get("extra") or {}
    extra = {str(k): tuple(str(v) for v in values or ()) for k, values in extra_raw.items()}
    return UserInfo(name, groups, str(raw.get("uid") or ""), extra).with_authenticated_group()


def user_of_certificate(peercert: Mapping[str, Any]) -> UserInfo | None:
    """The user of a verified client certificate: its CommonName, and its Organizations as groups."""
    names: list[str] = []
    groups: list[str] = []
    for rdn in peercert.get("subject") or ():
        for attribute, value in rdn:
            if attribute == "commonName":
                names.append(value)
            elif attribute == "organizationName":
                groups.append(value)
    if not names or not names[0]:
        return None
    return UserInfo(names[0], tuple(groups)).with_authenticated_group()
