"""The few pieces of Go's `time` package that robfig/cron's answers depend on, over the standard library's
zoneinfo: `time.Date` (with its choice of offset for wall clocks that a DST change skips or repeats),
`time.LoadLocation` and `time.ParseDuration`.

Times are whole Unix seconds (schedules have second granularity); `Wall` is a reading of one in a zone.
"""

from __future__ import annotations

import datetime
import os
import re
import zoneinfo
from functools import lru_cache
from typing import NamedTuple

_UTC = datetime.UTC
_EPOCH_ORDINAL = datetime.date(1970, 1, 1).toordinal()


class UnknownTimeZoneError(ValueError):
    """`time.LoadLocation` failed: Go's message is `unknown time zone <name>`."""


class Wall(NamedTuple):
    """The wall clock of an instant in a zone (Go's t.Year(), t.Month() ... t.Weekday(), Sunday = 0)."""

    year: int
    month: int
    day: int
    hour: int
    minute: int
    second: int
    weekday: int


def wall(unix: int, zone: datetime.tzinfo) -> Wall:
    t = datetime.datetime.fromtimestamp(unix, zone)
    return Wall(t.year, t.month, t.day, t.hour, t.minute, t.second, (t.weekday() + 1) % 7)


def offset(unix: int, zone: datetime.tzinfo) -> int:
    """The zone's UTC offset in seconds at an instant."""
    delta = datetime.datetime.fromtimestamp(unix, zone).utcoffset()
    return int(delta.total_seconds()) if delta is not None else 0


def date(year: int, month: int, day: int, hour: int, minute: int, second: int, zone: datetime.tzinfo) -> int:
    """Go's `time.Date`: out-of-range fields normalise (day 32 is the 1st of the next month), and a wall clock
    that does not exist or exists twice gets Go's offset, not Python's fold rule. Go first reads the offset
    in force at the wall clock taken as UTC; when that offset is not zero and the instant it gives falls
    outside that offset's period, it uses the offset in force at that instant instead. So a New York 02:30
    in the spring gap becomes 01:30 EST, a London 01:30 becomes 02:30 BST, and an ambiguous London 01:30 is
    the later (GMT) one."""
    years, month0 = divmod(month - 1, 12)
    first = datetime.date(year + years, month0 + 1, 1).toordinal() - _EPOCH_ORDINAL
    unix = (first + day - 1) * 86400 + hour * 3600 + minute * 60 + second
    guess = offset(unix, zone)
    if guess != 0:
        guess = offset(unix - guess, zone)
    return unix - guess


# ------------------------------------------------------------------ zones

_local_zone: datetime.tzinfo | None = None


def local_zone() -> datetime.tzinfo:
    """Go's `time.Local`: $TZ when set ("" is UTC), else /etc/localtime, else UTC."""
    global _local_zone
    if _local_zone is None:
        name = os.environ.get("TZ")
        if name is not None:
            try:
                _local_zone = load_location(name.removeprefix(":"))
            except UnknownTimeZoneError:
                _local_zone = _UTC
        else:
            try:
                with open("/etc/localtime", "rb") as f:
                    _local_zone = zoneinfo.ZoneInfo.from_file(f, key="Local")
            except OSError:
                _local_zone = _UTC
    return _local_zone


@lru_cache(maxsize=1024)
def load_location(name: str) -> datetime.tzinfo:
    """Go's `time.LoadLocation`: "" and "UTC" are UTC, "Local" the process's zone, else an IANA name (from the
    system's zone files or the tzdata package)."""
    if name in ("", "UTC"):
        return _UTC
    if name == "Local":
        return local_zone()
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        raise UnknownTimeZoneError(f"unknown time zone {name}") from None


# ------------------------------------------------------------------ durations

_UNITS = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,  # U+00B5
    "μs": 1_000,  # U+03BC
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_PART = re.compile(r"([0-9]*)(?:\.([0-9]*))?([^0-9.]*)")


def parse_duration(text: str) -> int:
    """Go's `time.ParseDuration`, in nanoseconds: a signed sequence of decimal numbers with units, e.g.
    "1h30m", "1.5s", "300ms"; errors carry Go's messages."""
    quoted = f'"{text}"'
    s, negative = text, False
    if s[:1] in ("-", "+"):
        negative, s = s[0] == "-", s[1:]
    if s == "0":
        return 0
    if not s:
        raise ValueError(f"time: invalid duration {quoted}")
    total = 0
    while s:
        match = _PART.match(s)
        assert match is not None  # the pattern matches the empty string
        whole, frac, unit = match.group(1), match.group(2), match.group(3)
        if not whole and not frac:
            raise ValueError(f"time: invalid duration {quoted}")
        if not unit:
            raise ValueError(f"time: missing unit in duration {quoted}")
        if unit not in _UNITS:
            raise ValueError(f'time: unknown unit "{unit}" in duration {quoted}')
        scale = _UNITS[unit]
        value = int(whole or "0") * scale
        if frac:
            value += int(frac) * scale // 10 ** len(frac)
        total += value
        if total > 2**63 - 1:
            raise ValueError(f"time: invalid duration {quoted}")
        s = s[match.end() :]
    return -total if negative else total
