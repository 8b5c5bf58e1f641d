"""Go-style durations as the manager's flags accept them."""

from __future__ import annotations

import pytest

from manager.config.durations import DurationError, format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("15s", 15.0),
        ("2m", 120.0),
        ("1h30m", 5400.0),
        ("500ms", 0.5),
        ("1.5s", 1.5),
        ("2h45m3s", 9903.0),
        ("1m0.5s", 60.5),
        (".5s", 0.5),
        ("250us", 0.00025),
        ("250µs", 0.00025),
        ("10ns", 1e-8),
        ("-1s", -1.0),
        ("+3s", 3.0),
        ("30", 30.0),  # a plain number is seconds
        ("2.5", 2.5),
        ("0", 0.0),
        (" 15s ", 15.0),
        (30, 30.0),
        (0.25, 0.25),
    ],
)
def test_parses(text: str | float, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "s", "15x", "1h 2m", "abc", "1.2.3s", "--1s", "15S", "1d", "m5"])
def test_rejects_with_the_text_quoted(text: str) -> None:
    with pytest.raises(DurationError) as info:
        parse_duration(text)
    assert f'"{text}"' in str(info.value)
    assert "15s" in str(info.value)  # says what is accepted


def test_rejects_booleans() -> None:
    with pytest.raises(DurationError):
        parse_duration(True)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(15, "15s"), (90, "1m30s"), (0.5, "500ms"), (3600, "1h"), (5400, "1h30m"), (0, "0s"), (2.5, "2.5s")],
)
def test_formats_like_go(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
    assert parse_duration(text) == pytest.approx(seconds)
