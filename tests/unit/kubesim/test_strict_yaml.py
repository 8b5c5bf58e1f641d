"""YAML bodies read as sigs.k8s.io/yaml reads them: JSON-compatible keys and scalars, bounded trees."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from kubesim.api.request import decode_object
from kubesim.api.yamlbody import BodyLoader
from kubesim.status.errors import ApiError


def _load(text: str) -> Any:
    return yaml.load(text, Loader=BodyLoader)  # BodyLoader is a SafeLoader


def test_map_keys_become_the_strings_go_yaml_writes() -> None:
    assert _load("1: a\n1.5: c\n2.0: d\nx: e\n") == {"1": "a", "1.5": "c", "2": "d", "x": "e"}
    assert _load("true: b\nfalse: c\n") == {"true": "b", "false": "c"}  # apart: in Python, True == 1


def test_timestamp_like_scalars_stay_strings_and_binary_is_its_text() -> None:
    assert _load("d: 2020-01-01\nt: 2020-01-01T00:00:00Z\nb: !!binary aGVsbG8=\n") == {
        "d": "2020-01-01",
        "t": "2020-01-01T00:00:00Z",
        "b": "hello",
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("~: a\n", "unsupported map key of type: <nil>"),
        ("a: .inf\n", "json: unsupported value: +Inf"),
        ("a: -.inf\n", "json: unsupported value: -Inf"),
        ("a: .nan\n", "json: unsupported value: NaN"),
        ("a:\n" + "".join("  " * (i + 1) + "a:\n" for i in range(250)), "exceeded max depth"),
    ],
)
def test_what_json_cannot_hold_is_a_400(text: str, message: str) -> None:
    with pytest.raises(ApiError) as caught:
        decode_object(text.encode(), "application/yaml", "ConfigMap")
    assert caught.value.code == 400 and message in caught.value.message
