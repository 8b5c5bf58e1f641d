"""metav1.Time as it decodes: Go's `time.Parse` with RFC 3339 (a fraction of a second is taken though the
layout has none). A string that does not parse fails decoding, 400, with Go's ParseError text, e.g.

    parsing time "garbage" as "2006-01-02T15:04:05Z07:00": cannot parse "garbage" as "2006"
"""

from __future__ import annotations

import calendar
import re

RFC3339 = "2006-01-02T15:04:05Z07:00"
# the layout's chunks: (the chunk as Go names it, digits it takes: 0 for a literal, -1 for the zone)
_CHUNKS = (
    ("2006", 4),
    ("-", 0),
    ("01", 2),
    ("-", 0),
    ("02", 2),
    ("T", 0),
    ("15", 2),
    (":", 0),
    ("04", 2),
    (":", 0),
    ("05", 2),
    ("Z07:00", -1),
)
_RANGES = {"01": ("month", 1, 12), "02": ("day", 1, 31), "15": ("hour", 0, 23), "04": ("minute", 0, 59)}
_RANGES["05"] = ("second", 0, 59)
_COMMON = re.compile(
    r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:[.,]\d+)?(?:Z|[+-](?:[01]\d|2[0-4]):[0-5]\d)", re.ASCII
)


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


PARSED: set[str] = set()  # times known good: clients send the same timestamps back on every update


def time_error(value: str) -> str | None:
    """Go's error parsing `value` as a metav1.Time, or None when it parses. (MicroTime, whose layout
    demands six fraction digits, is checked by `kubesim.registry.strategy.check_micro_times`.)"""
    if value in PARSED:
        return None
    found = _parse_error(value)
    if found is None:
        if len(PARSED) >= 8192:
            PARSED.clear()
        PARSED.add(value)
    return found


def _parse_error(value: str) -> str | None:
    common = _COMMON.fullmatch(value)
    if common is not None:  # the usual shape: only the ranges are left to check
        year, month, day, hour, minute, second = map(int, common.groups())
        in_month = 1 <= month <= 12 and 1 <= day <= calendar.monthrange(year, month)[1]
        if in_month and hour < 24 and minute < 60 and second < 60:
            return None
    return _walk(value)


def _walk(value: str) -> str | None:
    """Go's parse, chunk by chunk, for its error text."""
    head = f"parsing time {_quote(value)} as {_quote(RFC3339)}"
    rest = value
    numbers: dict[str, int] = {}
    for chunk, width in _CHUNKS:
        bad = f"{head}: cannot parse {_quote(rest)} as {_quote(chunk)}"
        if width == 0:
            if not rest.startswith(chunk):
                return bad
            rest = rest[1:]
        elif width > 0:
            digits = rest[:width]
            if chunk == "15":  # the hour takes one or two digits
                digits = rest[:2] if rest[:2].isdigit() else rest[:1]
            if (
                not digits
                or not (digits.isascii() and digits.isdigit())
                or (chunk == "2006" and len(digits) < 4)
            ):
                return bad
            numbers[chunk], rest = int(digits), rest[len(digits) :]
            if chunk == "05" and len(rest) >= 2 and rest[0] in ".," and rest[1].isdigit():
                fraction = len(rest) - len(rest[1:].lstrip("0123456789"))
                rest = rest[fraction:]
        else:
            zone_error = _zone(rest)
            if zone_error is None:
                return bad
            rest = zone_error
    for chunk, (name, low, high) in _RANGES.items():
        if not low <= numbers[chunk] <= high:
            return f"parsing time {_quote(value)}: {name} out of range"
    if numbers["02"] > calendar.monthrange(numbers["2006"], numbers["01"])[1]:
        return f"parsing time {_quote(value)}: day out of range"
    if rest:
        return f"parsing time {_quote(value)}: extra text: {_quote(rest)}"
    return None


def _zone(rest: str) -> str | None:
    """What is left after a `Z` or `±hh:mm` zone; None when there is none."""
    if rest.startswith("Z"):
        return rest[1:]
    if len(rest) < 6 or rest[0] not in "+-" or rest[3] != ":":
        return None
    hours, minutes = rest[1:3], rest[4:6]
    if not (hours.isdigit() and minutes.isdigit()) or int(hours) > 24 or int(minutes) > 60:
        return None
    return rest[6:]
