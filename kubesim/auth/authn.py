"""Authentication: bearer tokens (a static token file, kubesim's own admin token, service-account tokens
issued by the TokenRequest API) and TLS client certificates (CN = user, O = groups), as kube-apiserver's
`--token-auth-file`, TokenRequest and `--client-ca-file` authenticators do."""

from __future__ import annotations

import csv
import io
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubesim.auth.user import MASTERS, UserInfo, authenticated, service_account_user
from kubesim.storage.store import Store

ADMIN_TOKEN = "kubesim-admin-token"  # written into kubesim's kubeconfig
ADMIN_USER = UserInfo("kubesim-admin", groups=(MASTERS,))
API_AUDIENCES = ("https://kubernetes.default.svc.cluster.local",)  # kube-apiserver's default --api-audiences


class TokenFileError(ValueError):
    """A --token-auth-file that cannot be read or parsed; the message names the file and line."""


def parse_token_file(text: str, source: str = "token file") -> dict[str, UserInfo]:
    """Upstream's CSV format: token,user,uid[,"group1,group2"]; blank lines are skipped."""
    users: dict[str, UserInfo] = {}
    for number, row in enumerate(csv.reader(io.StringIO(text)), start=1):
        if not row or all(not cell.strip() for cell in row):
            continue
        if len(row) < 3:
            raise TokenFileError(
                f"{source}, line {number}: want token,user,uid[,groups], got {len(row)} fields"
            )
        token, name, uid = (cell.strip() for cell in row[:3])
        if not token or not name:
            raise TokenFileError(f"{source}, line {number}: the token and the user name must not be empty")
        groups = tuple(g.strip() for g in row[3].split(",") if g.strip()) if len(row) > 3 else ()
        users[token] = UserInfo(name, uid, groups)
    return users


def read_token_file(path: str | Path) -> dict[str, UserInfo]:
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise TokenFileError(f"--token-auth-file {path}: {exc.strerror or exc}") from None
    return parse_token_file(text, str(path))


@dataclass(frozen=True)
class IssuedToken:
    namespace: str
    name: str
    uid: str
    audiences: tuple[str, ...]
    expires: float


class Authenticator:
    """Maps credentials to users. Issued service-account tokens live in memory: a restart forgets them."""

    def __init__(self, store: Store, static_tokens: dict[str, UserInfo] | None = None) -> None:
        self.store = store
        self.static = {ADMIN_TOKEN: ADMIN_USER, **(static_tokens or {})}
        self.issued: dict[str, IssuedToken] = {}

    def issue(self, namespace: str, name: str, uid: str, audiences: tuple[str, ...], expires: float) -> str:
        """A new opaque token for the service account (TokenRequest)."""
        token = "kubesim-sa." + secrets.token_urlsafe(32)
        self.issued[token] = IssuedToken(namespace, name, uid, audiences or API_AUDIENCES, expires)
        return token

    def token_user(
        self, token: str, audiences: tuple[str, ...] = ()
    ) -> tuple[UserInfo, tuple[str, ...]] | None:
        """(user, the audiences it is valid for) or None. Requested `audiences` (TokenReview) must meet the
        token's; static tokens are valid for any audience, as upstream's token file is."""
        wanted = audiences or API_AUDIENCES
        user = self.static.get(token)
        if user is not None:
            return authenticated(user), wanted
        issued = self.issued.get(token)
        if issued is None:
            return None
        if issued.expires <= self.store.now():
            del self.issued[token]
            return None
        account = self.store.entry("serviceaccounts", issued.namespace, issued.name)
        if account is None or account.obj.get("metadata", {}).get("uid") != issued.uid:
            return None  # the service account was deleted (or recreated) since: its tokens die with it
        common = tuple(a for a in wanted if a in issued.audiences)
        if not common:
            return None
        return service_account_user(issued.namespace, issued.name, issued.uid), common

    def bearer(self, header: str | None) -> tuple[bool, UserInfo | None]:
        """(credentials sent, user): (False, None) without a bearer token, (True, None) for a bad one."""
        if not header:
            return False, None
        scheme, _, token = header.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return False, None
        found = self.token_user(token)
        return True, (found[0] if found is not None else None)


def certificate_user(peercert: Any) -> UserInfo | None:
    """The user of a verified client certificate (ssl's getpeercert() dict): CN is the name, O the groups."""
    if not isinstance(peercert, dict):
        return None
    name, groups = "", []
    for rdn in peercert.get("subject") or ():
        for key, value in rdn:
            if key == "commonName":
                name = value
            elif key == "organizationName":
                groups.append(value)
    return authenticated(UserInfo(name, groups=tuple(groups))) if name else None
