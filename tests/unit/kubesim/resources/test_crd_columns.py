"""CRD printer column cells as the apiextensions table convertor fills them (its cellForJSONValue cases)."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from kubesim.resources.crd_columns import column_cell, typed_cell
from kubesim.resources.printers import human_duration


def stamp(delta: datetime.timedelta) -> str:
    return (datetime.datetime.now(datetime.UTC) + delta).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize(
    ("column_type", "value", "cell"),
    [
        ("integer", 42, 42),
        ("integer", 3.14, 3),
        ("integer", True, None),
        ("integer", "foo", None),
        ("number", 42, 42.0),
        ("number", 3.14, 3.14),
        ("number", True, None),
        ("boolean", True, True),
        ("boolean", 42, None),
        ("string", 42, None),  # typed_cell's string case; string columns print instead (below)
        ("date", 42, None),
        ("date", "", "<unknown>"),
        ("date", "yesterday", "<invalid>"),
        # ids without the time: each pytest-xdist worker collects the tests and they must agree
        pytest.param("date", stamp(-datetime.timedelta(hours=12, minutes=30)), "12h", id="date-12h30m-ago"),
        pytest.param(
            "date", stamp(datetime.timedelta(hours=12, minutes=30)), "<invalid>", id="date-in-12h30m"
        ),
        ("unknown", "foo", None),
    ],
)
def test_typed_cell(column_type: str, value: Any, cell: Any) -> None:
    assert typed_cell(column_type, value, human_duration) == cell


def test_date_with_offset_and_fraction() -> None:
    ago = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5)
    text = ago.astimezone(datetime.timezone(datetime.timedelta(hours=2))).isoformat(timespec="microseconds")
    assert typed_cell("date", text, human_duration) == "5m"


OBJ = {
    "spec": {"servers": [{"hosts": ["foo"]}, {"hosts": ["bar", "baz"]}], "size": 2},
    "status": {"conditions": [{"type": "Ready", "status": "True"}]},
}


@pytest.mark.parametrize(
    ("path", "column_type", "cell"),
    [
        (".spec.servers[0].hosts[0]", "string", "foo"),
        (".spec.servers[0].hosts", "string", '["foo"]'),
        (".spec.servers[1].hosts", "string", '["bar","baz"]'),
        (".spec.servers[*].hosts", "string", '["foo"]'),  # only the first match is shown
        (".spec.servers[*].hosts[0]", "string", "foo"),
        (".spec.servers[0].hosts", "integer", None),
        (".spec.size", "string", "2"),
        (".spec.size", "integer", 2),
        ('.status.conditions[?(@.type=="Ready")].status', "string", "True"),
        ('.status.conditions[?(@.type=="Gone")].status', "string", None),
        (".spec.servers[9]", "string", None),
        (".spec[", "string", None),  # an unparsable path: empty cells
    ],
)
def test_column_cell(path: str, column_type: str, cell: Any) -> None:
    assert column_cell(path, column_type, human_duration)(OBJ) == cell


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (-5, "<invalid>"),
        (-0.5, "0s"),
        (45, "45s"),
        (200, "3m20s"),
        (3 * 86400 + 4 * 3600, "3d4h"),
        (400 * 86400, "400d"),
        (730 * 86400, "2y"),
        (800 * 86400, "2y70d"),
        (9 * 365 * 86400, "9y"),
    ],
)
def test_human_duration(seconds: float, text: str) -> None:
    assert human_duration(seconds) == text
