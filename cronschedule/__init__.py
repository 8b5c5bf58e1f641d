"""Cron schedules exactly as Kubernetes reads them: robfig/cron v3's `ParseStandard` and `Next`, on the
standard library's zoneinfo.

Shared by kubesim (the API server validates `spec.schedule` with this parser) and the CronJob controller
(which computes schedule times with it); it imports neither. Why not a library: croniter, the maintained
Python one (checked: 7.0), differs from robfig on cases CronJobs meet: it has no `@every` and no `TZ=`
prefix, it accepts six and seven fields where the API server must reject them, and it fires a wall clock that
DST skips (New York's 02:30 on the spring-forward day) at 03:00, where robfig skips that day.
"""

from cronschedule.gotime import UnknownTimeZoneError, load_location, local_zone, parse_duration
from cronschedule.parser import ScheduleError, parse_standard
from cronschedule.schedule import EverySchedule, Schedule, SpecSchedule

__all__ = [
    "EverySchedule",
    "Schedule",
    "ScheduleError",
    "SpecSchedule",
    "UnknownTimeZoneError",
    "load_location",
    "local_zone",
    "parse_duration",
    "parse_standard",
]
