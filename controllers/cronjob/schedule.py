"""When a CronJob should run (upstream: formatSchedule in cronjob_controllerv2.go; mostRecentScheduleTime,
nextScheduleTime and nextScheduleTimeDuration in utils.go). Pure functions of the CronJob, the parsed schedule
and `now` (Unix seconds), so tests cover long gaps and DST instantly."""

from __future__ import annotations

import datetime
import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from controllers.common.podutil import parse_time
from cronschedule import Schedule, load_location, local_zone

NEXT_SCHEDULE_DELTA = 0.1  # requeue a little after the schedule time, for clock skew (upstream: 100 ms)
TOO_MANY_MISSED = 100


class Missed(enum.Enum):
    NONE = "none"
    FEW = "few"
    MANY = "many"  # more than 100: the TooManyMissedTimes warning


class InvalidScheduleError(ValueError):
    """The schedule parses but its activations are less than a second apart, or never come (31 February)."""


@dataclass(frozen=True)
class MostRecent:
    earliest: float  # lastScheduleTime, else creationTimestamp, maybe raised to now - startingDeadlineSeconds
    time: float | None  # the latest activation in (earliest, now], if any
    missed: Missed


def spec(cronjob: Mapping[str, Any]) -> Mapping[str, Any]:
    value: Mapping[str, Any] = cronjob.get("spec") or {}
    return value


def status(cronjob: Mapping[str, Any]) -> Mapping[str, Any]:
    value: Mapping[str, Any] = cronjob.get("status") or {}
    return value


def uses_tz_prefix(cronjob: Mapping[str, Any]) -> bool:
    """The schedule carries TZ=/CRON_TZ= (upstream tests for "TZ" anywhere in it)."""
    return "TZ" in str(spec(cronjob).get("schedule") or "")


def format_schedule(cronjob: Mapping[str, Any]) -> str:
    """The text handed to the parser: the schedule as is when it names its own zone (or `timeZone` does not
    load: that is reported separately), else prefixed with `TZ=<timeZone>` when one is set."""
    schedule = str(spec(cronjob).get("schedule") or "")
    zone = spec(cronjob).get("timeZone")
    if uses_tz_prefix(cronjob) or zone is None:
        return schedule
    try:
        load_location(str(zone))
    except ValueError:
        return schedule
    return f"TZ={zone} {schedule}"


def annotation_zone(cronjob: Mapping[str, Any]) -> datetime.tzinfo:
    """The zone of the scheduled-timestamp annotation: `timeZone`, else UTC (Go's LoadLocation(""))."""
    return load_location(str(spec(cronjob).get("timeZone") or ""))


def _next(schedule: Schedule, after: float) -> float | None:
    found = schedule.next(after, local_zone())
    return None if found is None else float(found)


def most_recent_schedule_time(
    cronjob: Mapping[str, Any], now: float, schedule: Schedule, include_starting_deadline: bool
) -> MostRecent:
    """The latest activation since the last one run (or since creation), without listing every missed one:
    with startingDeadlineSeconds (when included), nothing older than now minus the deadline counts."""
    earliest = parse_time(status(cronjob).get("lastScheduleTime")) or parse_time(
        (cronjob.get("metadata") or {}).get("creationTimestamp")
    )
    earliest = earliest if earliest is not None else now
    deadline = spec(cronjob).get("startingDeadlineSeconds")
    if include_starting_deadline and deadline is not None:
        earliest = max(earliest, now - int(deadline))
    t1 = _next(schedule, earliest)
    t2 = None if t1 is None else _next(schedule, t1)
    if t1 is not None and now < t1:
        return MostRecent(earliest, None, Missed.NONE)
    if t1 is not None and t2 is not None and now < t2:
        return MostRecent(earliest, t1, Missed.NONE)
    interval = 0 if t1 is None or t2 is None else round(t2 - t1)
    if interval < 1:
        raise InvalidScheduleError("time difference between two schedules is less than 1 second")
    assert t1 is not None
    missed = int(now - t1) // interval + 1
    # Start a step before the estimate and let the schedule find the exact latest time: irregular schedules
    # (30 6-16/4 * * 1-5) make the estimate approximate.
    latest: float | None = None
    t: float | None = _next(schedule, t1 + (missed - 2) * interval)
    while t is not None and t <= now:
        latest = t
        t = _next(schedule, t)
    kind = Missed.MANY if missed > TOO_MANY_MISSED else Missed.FEW
    return MostRecent(earliest, latest, kind)


def next_schedule_delay(cronjob: Mapping[str, Any], now: float, schedule: Schedule) -> float | None:
    """Seconds until the activation after the most recent one (ignoring startingDeadlineSeconds), plus the
    skew margin; from now when the computation failed or times were missed. None: the schedule never fires
    again."""
    try:
        recent = most_recent_schedule_time(cronjob, now, schedule, include_starting_deadline=False)
        base = recent.time
        if base is None:
            base = recent.earliest if recent.missed is Missed.NONE else now
    except InvalidScheduleError:
        base = now
    following = _next(schedule, base)
    if following is None:
        return None
    return following + NEXT_SCHEDULE_DELTA - now
