"""kubesim's JSON answers are built without aiohttp's Response constructor: the same instance state."""

from __future__ import annotations

import pytest
from aiohttp import web

from kubesim.api import leanresponse


def state(response: web.Response) -> dict[str, object]:
    result = dict(vars(response))
    result["_headers"] = list(response.headers.items())
    return result


def test_the_installed_aiohttp_builds_the_same_state() -> None:
    assert leanresponse.IDENTICAL  # else every answer would take the constructor (correct, only slower)


@pytest.mark.parametrize("status", [200, 201, 202, 400, 404, 409, 410, 422, 429, 500, 504, 299])
@pytest.mark.parametrize("body", [b"", b"{}", b'{"kind":"Status","code":404}'])
def test_a_lean_response_is_the_constructors(status: int, body: bytes) -> None:
    lean = leanresponse.json_response(body, status)
    made = web.Response(body=body, status=status, content_type="application/json")
    assert type(lean) is web.Response
    assert state(lean) == state(made)
    assert lean.content_type == "application/json" and lean.status == status and lean.reason == made.reason
    lean.headers.add("Warning", '299 - "x"')  # each answer has headers of its own
    assert "Warning" not in leanresponse.json_response(body, status).headers
