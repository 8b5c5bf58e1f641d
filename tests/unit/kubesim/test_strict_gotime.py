"""metav1.Time decoding as Go's time.Parse(RFC3339, ...) does it: what parses, and the ParseError text of
what does not."""

from __future__ import annotations

import pytest

from kubesim.validation.decode_types import decode_message, type_error
from kubesim.validation.gotime import _walk, time_error
from kubesim.validation.meta_types import meta_type_error

LAYOUT = '"2006-01-02T15:04:05Z07:00"'


@pytest.mark.parametrize(
    "value",
    [
        "2020-01-01T00:00:00Z",
        "2020-01-01T00:00:00.123456789Z",
        "2020-01-01T00:00:00,5Z",
        "2020-01-01T00:00:00+02:00",
        "2020-01-01T00:00:00-24:00",
        "2024-02-29T23:59:59Z",
        "2020-01-01T7:00:00Z",  # Go's hour takes one digit too
    ],
)
def test_times_that_parse(value: str) -> None:
    assert time_error(value) is None
    assert _walk(value) is None  # the slow path agrees with the fast one


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("garbage", f'parsing time "garbage" as {LAYOUT}: cannot parse "garbage" as "2006"'),
        ("", f'parsing time "" as {LAYOUT}: cannot parse "" as "2006"'),
        ("2020-01-01", f'parsing time "2020-01-01" as {LAYOUT}: cannot parse "" as "T"'),
        (
            "2020-01-01 00:00:00Z",
            f'parsing time "2020-01-01 00:00:00Z" as {LAYOUT}: cannot parse " 00:00:00Z" as "T"',
        ),
        (
            "2020-1-01T00:00:00Z",
            f'parsing time "2020-1-01T00:00:00Z" as {LAYOUT}: cannot parse "1-01T00:00:00Z" as "01"',
        ),
        (
            "2020-01-01T00:00:00",
            f'parsing time "2020-01-01T00:00:00" as {LAYOUT}: cannot parse "" as "Z07:00"',
        ),
        ("2020-13-01T00:00:00Z", 'parsing time "2020-13-01T00:00:00Z": month out of range'),
        ("2023-02-29T00:00:00Z", 'parsing time "2023-02-29T00:00:00Z": day out of range'),
        ("2020-01-01T24:00:00Z", 'parsing time "2020-01-01T24:00:00Z": hour out of range'),
        ("2020-01-01T00:60:00Z", 'parsing time "2020-01-01T00:60:00Z": minute out of range'),
        ("2020-01-01T00:00:00Zjunk", 'parsing time "2020-01-01T00:00:00Zjunk": extra text: "junk"'),
    ],
)
def test_times_that_do_not_parse_get_go_s_text(value: str, error: str) -> None:
    assert time_error(value) == error


def test_a_bad_time_anywhere_is_a_decode_error_without_the_json_prefix() -> None:
    job = {"status": {"conditions": [{"type": "Complete", "status": "True", "lastTransitionTime": "now"}]}}
    wrong = type_error(("batch", "v1", "Job"), job)
    assert wrong is not None and decode_message(wrong).startswith('parsing time "now" as ')
    assert meta_type_error({"creationTimestamp": "now"}, "Pod") == wrong
    assert meta_type_error({"managedFields": [{"time": "now"}]}, "Pod") == wrong
    assert meta_type_error({"creationTimestamp": 5}, "Pod") == (
        "cannot unmarshal number into Go struct field ObjectMeta.metadata.creationTimestamp of type string"
    )
