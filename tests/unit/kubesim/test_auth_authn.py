"""Authentication: the static token file, issued service-account tokens, client certificates."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubesim.auth.authn import (
    ADMIN_TOKEN,
    API_AUDIENCES,
    Authenticator,
    TokenFileError,
    certificate_user,
    parse_token_file,
    read_token_file,
)
from kubesim.auth.user import UserInfo, split_service_account
from kubesim.storage.store import Store


def test_token_file_format() -> None:
    text = 'abc,alice,1001,"devs,ops"\n\nxyz,bob,1002\n tok , carol , 7 , solo \n'
    assert parse_token_file(text) == {
        "abc": UserInfo("alice", "1001", ("devs", "ops")),
        "xyz": UserInfo("bob", "1002"),
        "tok": UserInfo("carol", "7", ("solo",)),
    }


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("abc,alice\n", "line 1: want token,user,uid"),
        ("ok,a,1\n,bob,2\n", "line 2: the token and the user name must not be empty"),
    ],
)
def test_bad_token_files_name_the_line(text: str, error: str) -> None:
    with pytest.raises(TokenFileError, match=error):
        parse_token_file(text)


def test_unreadable_token_file(tmp_path: Path) -> None:
    with pytest.raises(TokenFileError, match=r"--token-auth-file .*missing"):
        read_token_file(tmp_path / "missing")


class Clock:
    def __init__(self) -> None:
        self.time = 1000.0

    def __call__(self) -> float:
        return self.time


def store_with_account(clock: Clock) -> tuple[Store, str]:
    store = Store(clock=clock)
    account = store.create("serviceaccounts", {"metadata": {"name": "bot", "namespace": "a"}})
    return store, str(account["metadata"]["uid"])


def test_bearer_tokens() -> None:
    auth = Authenticator(Store(), {"abc": UserInfo("alice", groups=("devs",))})
    assert auth.bearer(None) == (False, None)
    assert auth.bearer("Basic Zm9vOmJhcg==") == (False, None)
    assert auth.bearer("Bearer abc") == (True, UserInfo("alice", groups=("devs", "system:authenticated")))
    assert auth.bearer("bearer  abc ") == (True, UserInfo("alice", groups=("devs", "system:authenticated")))
    assert auth.bearer("Bearer nope") == (True, None)
    admin = auth.bearer(f"Bearer {ADMIN_TOKEN}")[1]
    assert admin is not None and "system:masters" in admin.groups


def test_service_account_tokens_expire_and_die_with_their_account() -> None:
    clock = Clock()
    store, uid = store_with_account(clock)
    auth = Authenticator(store)
    token = auth.issue("a", "bot", uid, (), expires=1600.0)
    found = auth.token_user(token)
    assert found is not None
    user, audiences = found
    assert split_service_account(user.name) == ("a", "bot")
    assert user.groups == ("system:serviceaccounts", "system:serviceaccounts:a", "system:authenticated")
    assert audiences == API_AUDIENCES
    assert auth.token_user(token, ("https://elsewhere",)) is None  # not issued for that audience
    clock.time = 1600.0
    assert auth.token_user(token) is None
    second = auth.issue("a", "bot", uid, (), expires=9000.0)
    store.delete("serviceaccounts", "a", "bot")
    store.create("serviceaccounts", {"metadata": {"name": "bot", "namespace": "a"}})  # same name, new uid
    assert auth.token_user(second) is None


def test_audience_bound_service_account_token() -> None:
    store, uid = store_with_account(Clock())
    auth = Authenticator(store)
    token = auth.issue("a", "bot", uid, ("vault", "aud2"), expires=2000.0)
    assert auth.token_user(token) is None  # not for the API server
    found = auth.token_user(token, ("vault", "other"))
    assert found is not None and found[1] == ("vault",)


def test_client_certificate_user() -> None:
    peer = {
        "subject": (
            (("organizationName", "ops"),),
            (("organizationName", "devs"),),
            (("commonName", "carol"),),
        )
    }
    assert certificate_user(peer) == UserInfo("carol", groups=("ops", "devs", "system:authenticated"))
    assert certificate_user({"subject": ((("organizationName", "ops"),),)}) is None
    assert certificate_user(None) is None
    assert certificate_user({}) is None
