"""robfig/cron v3's `ParseStandard`, the parser Kubernetes uses for CronJob schedules (parser.go).

Five fields (minute, hour, day of month, month, day of week), each a comma-separated list of `*`, `?`, a
number or name, `a-b`, with an optional `/step`; `n/step` means `n-max/step`. Month names JAN-DEC and day
names SUN-SAT, in any case. Descriptors `@yearly`/`@annually`, `@monthly`, `@weekly`, `@daily`/`@midnight`,
`@hourly` and `@every <Go duration>`. An optional `TZ=<zone> ` or `CRON_TZ=<zone> ` prefix. Error messages
are robfig's, since the API server and the controller's events show them to users.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping

from cronschedule.gotime import UnknownTimeZoneError, load_location, parse_duration
from cronschedule.schedule import STAR_BIT, EverySchedule, Schedule, SpecSchedule


class ScheduleError(ValueError):
    """The schedule does not parse; the message is robfig's."""


_MONTH_NAMES = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MONTHS = {name: i + 1 for i, name in enumerate(_MONTH_NAMES)}
_DAYS = {name: i for i, name in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}


class _Bounds:
    def __init__(self, low: int, high: int, names: Mapping[str, int] | None = None) -> None:
        self.low, self.high, self.names = low, high, names

    def all(self) -> int:
        return _bits(self.low, self.high, 1) | STAR_BIT


_MINUTE, _HOUR, _DOM = _Bounds(0, 59), _Bounds(0, 23), _Bounds(1, 31)
_MONTH, _DOW = _Bounds(1, 12, _MONTHS), _Bounds(0, 6, _DAYS)


def _bits(low: int, high: int, step: int) -> int:
    bits = 0
    for i in range(low, high + 1, step):
        bits |= 1 << i
    return bits


def _go_atoi(expr: str) -> int:
    """strconv.Atoi: optional sign, ASCII digits only."""
    body = expr[1:] if expr[:1] in ("+", "-") else expr
    if not body or not body.isascii() or not body.isdigit():
        raise ScheduleError(
            f'failed to parse int from {expr}: strconv.Atoi: parsing "{expr}": invalid syntax'
        )
    num = int(expr)
    if num < 0:
        raise ScheduleError(f"negative number ({num}) not allowed: {expr}")
    return num


def _int_or_name(expr: str, names: Mapping[str, int] | None) -> int:
    if names is not None and expr.lower() in names:
        return names[expr.lower()]
    return _go_atoi(expr)


def _range(expr: str, r: _Bounds) -> int:
    range_and_step = expr.split("/")
    low_and_high = range_and_step[0].split("-")
    single = len(low_and_high) == 1
    extra = 0
    if low_and_high[0] in ("*", "?"):
        start, end, extra = r.low, r.high, STAR_BIT
    else:
        start = _int_or_name(low_and_high[0], r.names)
        if len(low_and_high) == 1:
            end = start
        elif len(low_and_high) == 2:
            end = _int_or_name(low_and_high[1], r.names)
        else:
            raise ScheduleError(f"too many hyphens: {expr}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _go_atoi(range_and_step[1])
        if single:
            end = r.high
        if step > 1:
            extra = 0  # `*/2` restricts the field
    else:
        raise ScheduleError(f"too many slashes: {expr}")
    if start < r.low:
        raise ScheduleError(f"beginning of range ({start}) below minimum ({r.low}): {expr}")
    if end > r.high:
        raise ScheduleError(f"end of range ({end}) above maximum ({r.high}): {expr}")
    if start > end:
        raise ScheduleError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise ScheduleError(f"step of range should be a positive number: {expr}")
    return _bits(start, end, step) | extra


def _field(field: str, r: _Bounds) -> int:
    bits = 0
    for expr in (part for part in field.split(",") if part):
        bits |= _range(expr, r)
    return bits


_DESCRIPTORS: dict[str, tuple[int, int, int, int, int]] = {
    # minute, hour, day of month, month, day of week
    "@yearly": (1, 1, 1 << 1, 1 << 1, _DOW.all()),
    "@annually": (1, 1, 1 << 1, 1 << 1, _DOW.all()),
    "@monthly": (1, 1, 1 << 1, _MONTH.all(), _DOW.all()),
    "@weekly": (1, 1, _DOM.all(), _MONTH.all(), 1),
    "@daily": (1, 1, _DOM.all(), _MONTH.all(), _DOW.all()),
    "@midnight": (1, 1, _DOM.all(), _MONTH.all(), _DOW.all()),
    "@hourly": (1, _HOUR.all(), _DOM.all(), _MONTH.all(), _DOW.all()),
}

_NANOS = 1_000_000_000


def parse_standard(spec: str) -> Schedule:
    """Parse a standard (five-field or descriptor) schedule; raise ScheduleError with robfig's message."""
    if not spec:
        raise ScheduleError("empty spec string")
    zone = None
    if spec.startswith(("TZ=", "CRON_TZ=")):
        space, eq = spec.find(" "), spec.find("=")
        name = spec[eq + 1 : space] if space >= 0 else spec[eq + 1 :]
        try:
            zone = load_location(name)
        except UnknownTimeZoneError as err:
            raise ScheduleError(f"provided bad location {name}: {err}") from None
        spec = spec[space:].strip() if space >= 0 else ""
    if spec.startswith("@"):
        return _descriptor(spec, zone)
    fields = spec.split()
    if len(fields) != 5:
        shown = "[" + " ".join(fields) + "]"
        raise ScheduleError(f"expected exactly 5 fields, found {len(fields)}: {shown}")
    return SpecSchedule(
        second=1,  # second 0 only
        minute=_field(fields[0], _MINUTE),
        hour=_field(fields[1], _HOUR),
        dom=_field(fields[2], _DOM),
        month=_field(fields[3], _MONTH),
        dow=_field(fields[4], _DOW),
        zone=zone,
    )


def _descriptor(spec: str, zone: datetime.tzinfo | None) -> Schedule:
    fields = _DESCRIPTORS.get(spec)
    if fields is not None:
        minute, hour, dom, month, dow = fields
        return SpecSchedule(1, minute, hour, dom, month, dow, zone)
    if spec.startswith("@every "):
        try:
            nanos = parse_duration(spec[len("@every ") :])
        except ValueError as err:
            raise ScheduleError(f"failed to parse duration {spec}: {err}") from None
        # Less than a second counts as one; fractions of a second are dropped (robfig's Every).
        return EverySchedule(max(nanos, _NANOS) // _NANOS)
    raise ScheduleError(f"unrecognized descriptor: {spec}")
