"""`Request`, the key every controller queue holds: what it equals, hashes to and prints as."""

from __future__ import annotations

import pytest

from manager import Request


def test_a_request_is_its_namespace_and_name() -> None:
    request = Request("ns", "web")
    assert request.key == "ns/web" and str(request) == "ns/web"
    assert Request.from_key("ns/web") == request
    assert Request.from_key("node-1") == Request("", "node-1") and Request("", "node-1").key == "node-1"
    assert Request.for_object({"metadata": {"namespace": "ns", "name": "web"}}) == request
    assert Request.for_object({"metadata": {"name": "cluster-scoped"}}) == Request("", "cluster-scoped")


def test_equal_requests_are_one_queue_entry_and_cannot_change() -> None:
    assert {Request("ns", "a"), Request("ns", "a"), Request("ns", "b")} == {
        Request("ns", "a"),
        Request("ns", "b"),
    }
    assert Request("ns", "a") != Request("other", "a")
    with pytest.raises(AttributeError):
        Request("ns", "a").name = "b"  # type: ignore[misc]
    assert repr(Request("ns", "a")) == "Request(namespace='ns', name='a')"
