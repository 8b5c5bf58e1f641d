"""Label and field selector grammar and matching (apimachinery semantics)."""

from __future__ import annotations

from typing import Any

import pytest

from kubesim.api.selectors import (
    fields_match,
    label_selector_from_object,
    labels_match,
    parse_field_selector,
    parse_label_selector,
)
from kubesim.status.errors import ApiError


def obj(labels: dict[str, str] | None = None, **fields: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "ns", "labels": labels or {}}, **fields}


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        ("", {}, True),
        ("app=a", {"app": "a"}, True),
        ("app==a", {"app": "a"}, True),
        ("app=a", {"app": "b"}, False),
        ("app!=a", {"app": "b"}, True),
        ("app!=a", {}, True),  # != also matches objects without the key
        ("app!=a", {"app": "a"}, False),
        ("app in (a,b)", {"app": "b"}, True),
        ("app in (a,b)", {"app": "c"}, False),
        ("app notin (a,b)", {}, True),
        ("app notin (a,b)", {"app": "a"}, False),
        ("app", {"app": ""}, True),
        ("app", {}, False),
        ("!app", {}, True),
        ("!app", {"app": "x"}, False),
        ("app=a,tier", {"app": "a", "tier": "web"}, True),
        ("app=a,tier", {"app": "a"}, False),
        ("app in (a,b),!tier", {"app": "a"}, True),
        ("x>1", {"x": "2"}, True),
        ("x<1", {"x": "2"}, False),
        ("x>1", {"x": "nan"}, False),
        ("example.com/role=web", {"example.com/role": "web"}, True),
        ("app=", {"app": ""}, True),
        ("  app = a , tier ", {"app": "a", "tier": "1"}, True),
    ],
)
def test_label_selector_matching(selector: str, labels: dict[str, str], expected: bool) -> None:
    assert labels_match(parse_label_selector(selector), obj(labels)) is expected


@pytest.mark.parametrize(
    "selector",
    [
        "app=(",
        "app in a",
        "app in (a",
        "=a",
        "app=a,",
        ",",
        "app notin ()",
        "a b",
        "bad key!=x",
        "x>y",
        "app=a b",
        "-bad=x",
        "app=" + "v" * 64,
        "a/b/c=d",
        "!",
        "app in (a b)",
    ],
)
def test_malformed_label_selectors_are_400(selector: str) -> None:
    with pytest.raises(ApiError) as err:
        parse_label_selector(selector)
    assert err.value.code == 400 and err.value.reason == "BadRequest"
    assert err.value.message.startswith("unable to parse requirement")


POD_FIELDS = {
    "metadata.name": "metadata.name",
    "metadata.namespace": "metadata.namespace",
    "status.phase": "status.phase",
    "spec.nodeName": "spec.nodeName",
}


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("metadata.name=p", True),
        ("metadata.name==p", True),
        ("metadata.name!=p", False),
        ("status.phase=Running,spec.nodeName=n1", True),
        ("status.phase=Running,spec.nodeName!=n1", False),
        ("spec.nodeName=", False),
        ("metadata.namespace=ns", True),
    ],
)
def test_field_selector_matching(selector: str, expected: bool) -> None:
    pod = obj(spec={"nodeName": "n1"}, status={"phase": "Running"})
    assert fields_match(parse_field_selector(selector, POD_FIELDS), pod) is expected


def test_missing_field_matches_empty_value() -> None:
    assert fields_match(parse_field_selector("spec.nodeName=", POD_FIELDS), obj(spec={}))


def test_escaped_values() -> None:
    parsed = parse_field_selector(r"metadata.name=a\,b", POD_FIELDS)
    assert parsed == (("metadata.name", "=", "a,b"),)


@pytest.mark.parametrize("selector", ["foo.bar=x", "status.podIP=1"])
def test_unknown_field_is_400(selector: str) -> None:
    with pytest.raises(ApiError) as err:
        parse_field_selector(selector, POD_FIELDS)
    assert err.value.code == 400
    assert err.value.message == f"field label not supported: {selector.split('=')[0]}"


def test_unknown_field_on_custom_resource_lists_the_known_ones() -> None:
    with pytest.raises(ApiError) as err:
        parse_field_selector(
            "foo.bar=x",
            {"metadata.name": "metadata.name", "metadata.namespace": "metadata.namespace"},
            custom=True,
        )
    assert err.value.message == (
        '"foo.bar" is not a known field selector: only "metadata.name", "metadata.namespace"'
    )


@pytest.mark.parametrize("selector", ["metadata.name", "metadata.name in (a)", "(x)=y", "=x"])
def test_malformed_field_selectors_are_400(selector: str) -> None:
    with pytest.raises(ApiError) as err:
        parse_field_selector(selector, POD_FIELDS)
    assert err.value.code == 400


def test_label_selector_object_to_string() -> None:
    selector = {
        "matchLabels": {"b": "2", "a": "1"},
        "matchExpressions": [
            {"key": "t", "operator": "In", "values": ["y", "x"]},
            {"key": "u", "operator": "DoesNotExist"},
        ],
    }
    text = label_selector_from_object(selector)
    assert text == "a=1,b=2,t in (x,y),!u"
    assert labels_match(parse_label_selector(text), obj({"a": "1", "b": "2", "t": "x"}))
