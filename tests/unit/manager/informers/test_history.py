"""Telling a new history from resourceVersions and identities (manager.informers.history)."""

from __future__ import annotations

from typing import Any

from manager.informers.history import replaced_identity, went_backwards


def cm(name: str, uid: str, rv: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "uid": uid, "resourceVersion": rv}}


def test_went_backwards_only_for_two_integers_going_down() -> None:
    assert went_backwards("500", "4")
    assert not went_backwards("500", "500") and not went_backwards("4", "500")
    assert not went_backwards("", "4")  # nothing synced yet
    assert not went_backwards("abc", "4") and not went_backwards("500", "xyz")  # opaque: no judgement


def test_replaced_identity_needs_another_uid_and_a_lower_resource_version() -> None:
    cache = {"ns/a": cm("a", "u1", "50"), "ns/b": cm("b", "u2", "10")}
    assert replaced_identity([cm("a", "u1", "60")], cache.get) is None  # updated
    assert replaced_identity([cm("b", "u3", "70")], cache.get) is None  # recreated: higher RV
    assert replaced_identity([cm("c", "u4", "1")], cache.get) is None  # new
    assert replaced_identity([{"metadata": {}}, cm("a", "u9", "3")], cache.get) == ("ns/a", "50", "3")
