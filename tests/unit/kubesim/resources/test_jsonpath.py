"""The Kubernetes JSONPath dialect against a table of cases: what k8s.io/client-go/util/jsonpath finds
(missing keys allowed, as the CRD table convertor sets) and how each result prints."""

from __future__ import annotations

from typing import Any

import pytest

from kubesim.resources.jsonpath import JSONPathError, find_results, format_value, go_float, parse_template

OBJ: dict[str, Any] = {
    "metadata": {"name": "w", "labels": {"b": "2", "a": "1"}},
    "spec": {
        "replicas": 3,
        "ratio": 0.5,
        "paused": False,
        "nothing": None,
        "items": [{"name": "x", "n": 1}, {"name": "y", "n": 2}, {"name": "z", "n": 3, "extra": True}],
        "dotted": {"a.b": "dot"},
    },
    "status": {
        "conditions": [
            {"type": "Progressing", "status": "True"},
            {"type": "Ready", "status": "False", "reason": "Waiting"},
        ]
    },
}


def find(expr: str, data: Any = OBJ) -> list[Any]:
    results = find_results(parse_template("{" + expr + "}"), data)
    assert len(results) == 1
    return results[0]


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        (".metadata.name", ["w"]),
        ("$.metadata.name", ["w"]),
        (".spec.missing", []),
        (".spec.missing.deeper", []),
        (".spec.nothing", [None]),  # a key holding null is a result
        (".spec.nothing.x", []),
        (".metadata.name.x", []),  # a field of a string: nothing
        ('.status.conditions[?(@.type=="Ready")].status', ["False"]),
        (".status.conditions[?(@.type=='Ready')].reason", ["Waiting"]),
        ('.status.conditions[?(@.type == "Ready")].status', ["False"]),
        ('.status.conditions[?(@.type!="Ready")].type', ["Progressing"]),
        ('.status.conditions[?(@.type=="Gone")].status', []),
        (".status.conditions[?(@.reason)].type", ["Ready"]),  # existence
        (".spec.items[?(@.n>1)].name", ["y", "z"]),
        (".spec.items[?(@.n>=2)].name", ["y", "z"]),
        (".spec.items[?(@.n<2)].name", ["x"]),
        (".spec.items[?(@.n<=2)].name", ["x", "y"]),
        (".spec.items[?(@.n==2)].name", ["y"]),
        (".spec.items[?(@.extra==true)].name", ["z"]),
        (".spec.items[?(@.name<'y')].n", [1]),  # strings order too
        (".spec.items[?(@.missing=='q')].name", []),
        (".spec.items[*].name", ["x", "y", "z"]),
        (".spec.items.*.name", ["x", "y", "z"]),  # `.*` takes list items as well as map values
        (".spec.items[0].name", ["x"]),
        (".spec.items[-1].name", ["z"]),
        (".spec.items[0:2].name", ["x", "y"]),
        (".spec.items[1:].name", ["y", "z"]),
        (".spec.items[:-1].name", ["x", "y"]),
        (".spec.items[::2].name", ["x", "z"]),
        (".spec.items[1:1].name", []),
        (".spec.items[0,2].name", ["x", "z"]),
        (".metadata['name','labels']", ["w", {"b": "2", "a": "1"}]),
        (".metadata.labels.*", ["1", "2"]),  # map values in key order
        (".metadata.labels[*]", None),  # `[*]` is a slice: a map is an error
        ("..name", ["w", "x", "y", "z"]),
        (".status..type", ["Progressing", "Ready"]),
        (".spec['dotted']", [{"a.b": "dot"}]),
        (".spec.dotted.a\\.b", ["dot"]),
        (".spec.items[5].name", None),  # out of bounds: an error, shown as an empty cell
        (".metadata.name[0]", None),
        (".metadata[?(@.x)]", None),  # filters take lists only
        (".spec.items[?(@.n==1.0)].name", None),  # int against float: incompatible in Go templates
        (".spec.items[?(@.n=='1')].name", None),
        (".spec.items[?(@.extra>true)].name", None),  # no kind of order on booleans (x, y lack it: skipped)
        (".spec.items[?(@.n=1)].name", None),  # `=` parses, then is an unknown operator
        (".spec.items[?(@.n)].n", [1, 2, 3]),
        ("range", None),
    ],
)
def test_find(expr: str, expected: list[Any] | None) -> None:
    if expected is None:
        with pytest.raises(JSONPathError):
            find(expr)
    else:
        assert find(expr) == expected


@pytest.mark.parametrize(
    "expr",
    [".a[", ".a[?(@.b==1)", ".a[x]", "..  ..a", "'open", "#", ".a\n", ".a[1:x]", ".a[?(@.b==1)x"],
)
def test_parse_errors(expr: str) -> None:
    with pytest.raises(JSONPathError):
        find(expr, {})


def test_template_text_and_literals() -> None:
    template = parse_template("name={.metadata.name} n={.spec.replicas}")
    assert find_results(template, OBJ) == [["name="], ["w"], [" n="], [3]]
    assert find('"lit"') == ["lit"]
    assert find("true") == [True]
    assert find("42") == [42] and find("-1.5") == [-1.5]


@pytest.mark.parametrize(
    ("value", "printed"),
    [
        ("text", "text"),
        (3, "3"),
        (True, "true"),
        (None, "<no value>"),
        (["a", "b"], '["a","b"]'),
        ({"b": 1, "a": [1, 2]}, '{"a":[1,2],"b":1}'),
        ({"h": "<&>"}, '{"h":"\\u003c\\u0026\\u003e"}'),
        (0.5, "0.5"),
        (2.0, "2"),
        (1e20, "100000000000000000000"),
        (1e21, "1e+21"),
        (1.5e-5, "1.5e-05"),
        (0.0001, "0.0001"),
        (-123.25, "-123.25"),
    ],
)
def test_format_value(value: Any, printed: str) -> None:
    assert format_value(value) == printed


def test_go_float_zero() -> None:
    assert go_float(0.0) == "0" and go_float(-0.0) == "-0"
