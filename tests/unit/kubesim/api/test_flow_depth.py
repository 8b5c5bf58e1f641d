"""kubesim.api.request.flow_depth: the bracket bound that refuses bodies nesting past MAX_DEPTH."""

from __future__ import annotations

import pytest

from kubesim.api.request import flow_depth
from kubesim.validation.nesting import MAX_DEPTH


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"", 0),
        (b'{"a":[1,2]}', 0),
        (b"[" * MAX_DEPTH + b"]" * MAX_DEPTH, 0),  # as deep as allowed: not measured
        (b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1), MAX_DEPTH + 1),
        (b"[" * (MAX_DEPTH + 1), MAX_DEPTH + 1),  # unclosed: still counted
        (b"[]" * (MAX_DEPTH + 1), 1),  # many brackets, shallow
        (b'{"a":"' + b"x" * 300 + b'"}', 0),  # long, few brackets
    ],
)
def test_flow_depth_bounds_the_nesting(body: bytes, expected: int) -> None:
    assert flow_depth(body) == expected
