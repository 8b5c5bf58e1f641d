"""The two kinds of schedule robfig/cron v3 parses, and their `Next`.

`SpecSchedule.next` follows robfig's field-by-field search exactly (spec.go): find a matching month, then
day, hour, minute and second, resetting the smaller fields when a larger one moves and starting over when a
field wraps. Days move by calendar (Go's `AddDate`), hours, minutes and seconds by elapsed time, and the
wall clock is read back after each step; that is what decides DST. A wall clock skipped in spring never
fires (02:30 on the day New York goes from 02:00 to 03:00), one repeated in autumn fires twice (01:30 in
New York on the first Sunday of November). Nothing found within five years → None (Go's zero time).
"""

from __future__ import annotations

import datetime
import math
from dataclasses import dataclass

from cronschedule.gotime import Wall, date, offset, wall

STAR_BIT = 1 << 63  # the field was written `*` or `?` (robfig's starBit)


def _bit(value: int, bits: int) -> bool:
    return bool(bits >> value & 1)


def _steps_to(current: int, bits: int, size: int) -> int:
    """Steps of one unit from `current` to the next value set in `bits`, or to the wrap at `size`."""
    ahead = (bits >> (current + 1)) & ((1 << max(0, size - current - 1)) - 1)  # values current+1 .. size-1
    return (ahead & -ahead).bit_length() if ahead else size - current


def _advance(t: int, w: Wall, loc: datetime.tzinfo, unit: int, steps: int) -> tuple[int, Wall]:
    """robfig adds one hour (or minute) at a time and reads the wall clock after each; jump `steps` units at
    once instead, which is the same unless the zone's offset changes on the way, and then step as robfig
    does. (Only the loop's exit points matter: the first matching value, or the wrap to 0.)"""
    if steps > 1:
        jumped = t + unit * steps
        landed = wall(jumped, loc)
        if offset(jumped, loc) == offset(t, loc):
            return jumped, landed
    t += unit
    return t, wall(t, loc)


@dataclass(frozen=True)
class SpecSchedule:
    """A crontab line as bit sets per field (bit n set: value n matches), in `zone` (None: the zone of the
    time asked about, robfig's time.Local)."""

    second: int
    minute: int
    hour: int
    dom: int
    month: int
    dow: int
    zone: datetime.tzinfo | None = None

    def day_matches(self, day: int, weekday: int) -> bool:
        """Day of month and day of week: both must match when either was written `*`/`?`; otherwise either
        may (robfig's dayMatches; `*/2` counts as restricted)."""
        dom, dow = _bit(day, self.dom), _bit(weekday, self.dow)
        if self.dom & STAR_BIT or self.dow & STAR_BIT:
            return dom and dow
        return dom or dow

    def next(self, after: float, zone: datetime.tzinfo) -> int | None:
        """The first activation strictly after `after` (Unix seconds), read in this schedule's zone or else
        in `zone`."""
        loc = self.zone or zone
        t = math.floor(after) + 1  # the upcoming whole second
        added = False
        year_limit = wall(t, loc).year + 5
        while True:  # robfig's WRAP label
            w = wall(t, loc)
            if w.year > year_limit:
                return None
            wrapped = False
            while not _bit(w.month, self.month):
                if not added:
                    added = True
                    t = date(w.year, w.month, 1, 0, 0, 0, loc)
                    w = wall(t, loc)
                t = date(w.year, w.month + 1, w.day, w.hour, w.minute, w.second, loc)
                w = wall(t, loc)
                if w.month == 1:
                    wrapped = True
                    break
            if wrapped:
                continue
            while not self.day_matches(w.day, w.weekday):
                if not added:
                    added = True
                    t = date(w.year, w.month, w.day, 0, 0, 0, loc)
                    w = wall(t, loc)
                t = date(w.year, w.month, w.day + 1, w.hour, w.minute, w.second, loc)
                w = wall(t, loc)
                if w.hour != 0:  # a DST change moved midnight: back to the start of the day
                    t += (24 - w.hour) * 3600 if w.hour > 12 else -w.hour * 3600
                    w = wall(t, loc)
                if w.day == 1:
                    wrapped = True
                    break
            if wrapped:
                continue
            while not _bit(w.hour, self.hour):
                if not added:
                    added = True
                    t = date(w.year, w.month, w.day, w.hour, 0, 0, loc)
                    w = wall(t, loc)
                t, w = _advance(t, w, loc, 3600, _steps_to(w.hour, self.hour, 24))
                if w.hour == 0:
                    wrapped = True
                    break
            if wrapped:
                continue
            while not _bit(w.minute, self.minute):
                if not added:
                    added = True
                    t -= t % 60
                    w = wall(t, loc)
                t, w = _advance(t, w, loc, 60, _steps_to(w.minute, self.minute, 60))
                if w.minute == 0:
                    wrapped = True
                    break
            if wrapped:
                continue
            while not _bit(w.second, self.second):
                added = True  # times are whole seconds already: nothing to truncate
                # One jump to the next matching second (or the wrap), not a wall-clock reading per second:
                # from hh:00:01 a standard schedule would otherwise read the clock 59 times.
                t, w = _advance(t, w, loc, 1, _steps_to(w.second, self.second, 60))
                if w.second == 0:
                    wrapped = True
                    break
            if wrapped:
                continue
            return t


@dataclass(frozen=True)
class EverySchedule:
    """`@every <duration>`: a fixed delay of whole seconds, at least one (robfig's ConstantDelaySchedule)."""

    delay: int

    def next(self, after: float, zone: datetime.tzinfo) -> int | None:
        return math.floor(after) + self.delay


Schedule = SpecSchedule | EverySchedule
