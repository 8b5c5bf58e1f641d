"""robfig/cron v3's ParseStandard and Next, case by case: cases from robfig's own tables (spec_test.go,
parser_test.go) rewritten for five fields, plus both DST transitions in New York and London."""

from __future__ import annotations

import datetime

import pytest

from cronschedule import EverySchedule, ScheduleError, SpecSchedule, parse_duration, parse_standard
from cronschedule.gotime import date, load_location

UTC = datetime.UTC
NY = load_location("America/New_York")
LONDON = load_location("Europe/London")


def at(text: str) -> float:
    return datetime.datetime.fromisoformat(text).timestamp()


NEXT_CASES: list[tuple[str, str, str | None]] = [
    # (now, schedule, next activation or None: none within five years)
    ("2012-07-09T14:45:00+00:00", "0/15 * * * *", "2012-07-09T15:00:00+00:00"),
    ("2012-07-09T14:59:00+00:00", "0/15 * * * *", "2012-07-09T15:00:00+00:00"),
    ("2012-07-09T14:59:59+00:00", "0/15 * * * *", "2012-07-09T15:00:00+00:00"),
    ("2012-07-09T15:00:00+00:00", "0/15 * * * *", "2012-07-09T15:15:00+00:00"),  # strictly after
    ("2012-07-09T15:00:00.5+00:00", "* * * * *", "2012-07-09T15:01:00+00:00"),
    ("2012-07-09T23:46:00+00:00", "*/15 * * * *", "2012-07-10T00:00:00+00:00"),  # wrap days
    ("2012-07-09T23:35:00+00:00", "20-35/15 1/2 */2 * *", "2012-07-11T01:20:00+00:00"),
    ("2012-07-09T23:35:00+00:00", "0 0 9 Apr-Oct ?", "2012-08-09T00:00:00+00:00"),  # wrap months
    ("2012-12-31T23:59:45+00:00", "* * * * *", "2013-01-01T00:00:00+00:00"),  # wrap everything
    ("2012-07-09T23:35:00+00:00", "0 0 * Feb Mon", "2013-02-04T00:00:00+00:00"),  # wrap years
    ("2012-07-09T23:35:00+00:00", "0 0 29 Feb ?", "2016-02-29T00:00:00+00:00"),  # leap year
    ("2012-07-09T23:35:00+00:00", "0 0 30 Feb ?", None),  # unsatisfiable
    ("2012-07-09T23:35:00+00:00", "0 0 31 Apr ?", None),
    # Day of month OR day of week when both are restricted, AND when either is * or ?.
    ("2012-07-09T23:35:00+00:00", "0 0 */5 Apr,Aug,Oct Mon", "2012-08-01T00:00:00+00:00"),  # */5: OR
    ("2012-07-09T23:35:00+00:00", "0 0 */5 Oct Mon", "2012-10-01T00:00:00+00:00"),
    ("2012-07-09T23:35:00+00:00", "0 0 * Feb Mon/2", "2013-02-01T00:00:00+00:00"),  # * : AND
    ("2012-07-09T23:35:00+00:00", "0 0 13 * FRI", "2012-07-13T00:00:00+00:00"),  # 13th OR Friday
    ("2012-07-14T00:00:00+00:00", "0 0 13 * FRI", "2012-07-20T00:00:00+00:00"),
    ("2012-07-09T23:35:00+00:00", "0 0 ? * FRI", "2012-07-13T00:00:00+00:00"),
    ("2012-07-09T23:35:00+00:00", "0 0 */1 * FRI", "2012-07-13T00:00:00+00:00"),  # */1 keeps the star
    ("2012-07-10T00:00:00+00:00", "0 0 */1 * FRI", "2012-07-13T00:00:00+00:00"),
    ("2012-07-10T00:00:00+00:00", "0 0 1-31 * FRI", "2012-07-11T00:00:00+00:00"),  # 1-31: OR
    ("2012-07-09T23:35:00+00:00", "0 0 1 1 SUN", "2013-01-01T00:00:00+00:00"),  # January only
    # Descriptors.
    ("2012-07-09T23:35:00+00:00", "@hourly", "2012-07-10T00:00:00+00:00"),
    ("2012-07-09T23:35:00+00:00", "@daily", "2012-07-10T00:00:00+00:00"),
    ("2012-07-09T23:35:00+00:00", "@midnight", "2012-07-10T00:00:00+00:00"),
    ("2012-07-09T23:35:00+00:00", "@weekly", "2012-07-15T00:00:00+00:00"),
    ("2012-07-09T23:35:00+00:00", "@monthly", "2012-08-01T00:00:00+00:00"),
    ("2012-07-09T23:35:00+00:00", "@yearly", "2013-01-01T00:00:00+00:00"),
    ("2012-07-09T23:35:00+00:00", "@annually", "2013-01-01T00:00:00+00:00"),
    ("2012-07-09T23:35:00.9+00:00", "@every 1h30m", "2012-07-10T01:05:00+00:00"),
    ("2012-07-09T23:35:00+00:00", "@every 500ms", "2012-07-09T23:35:01+00:00"),  # at least a second
    ("2012-07-09T23:35:00+00:00", "@every 1.9s", "2012-07-09T23:35:01+00:00"),  # fraction dropped
    # New York, spring forward (2012-03-11 02:00 EST -> 03:00 EDT): 02:xx does not exist that day.
    ("2012-03-11T00:00:00-05:00", "TZ=America/New_York 30 2 11 Mar ?", "2013-03-11T02:30:00-04:00"),
    ("2012-03-11T00:00:00-05:00", "TZ=America/New_York 0 * * * *", "2012-03-11T01:00:00-05:00"),
    ("2012-03-11T01:00:00-05:00", "TZ=America/New_York 0 * * * *", "2012-03-11T03:00:00-04:00"),
    ("2012-03-11T03:00:00-04:00", "TZ=America/New_York 0 * * * *", "2012-03-11T04:00:00-04:00"),
    ("2012-03-11T00:00:00-05:00", "TZ=America/New_York 0 1 * * *", "2012-03-11T01:00:00-05:00"),
    ("2012-03-11T01:00:00-05:00", "TZ=America/New_York 0 1 * * *", "2012-03-12T01:00:00-04:00"),
    ("2012-03-11T00:00:00-05:00", "TZ=America/New_York 0 2 * * *", "2012-03-12T02:00:00-04:00"),
    # New York, fall back (2012-11-04 02:00 EDT -> 01:00 EST): 01:xx happens twice, and fires twice.
    ("2012-11-04T00:00:00-04:00", "TZ=America/New_York 30 2 04 Nov ?", "2012-11-04T02:30:00-05:00"),
    ("2012-11-04T01:45:00-04:00", "TZ=America/New_York 30 1 04 Nov ?", "2012-11-04T01:30:00-05:00"),
    ("2012-11-04T00:00:00-04:00", "TZ=America/New_York 0 * * * *", "2012-11-04T01:00:00-04:00"),
    ("2012-11-04T01:00:00-04:00", "TZ=America/New_York 0 * * * *", "2012-11-04T01:00:00-05:00"),
    ("2012-11-04T01:00:00-05:00", "TZ=America/New_York 0 * * * *", "2012-11-04T02:00:00-05:00"),
    ("2012-11-04T00:00:00-04:00", "TZ=America/New_York 0 1 * * *", "2012-11-04T01:00:00-04:00"),
    ("2012-11-04T01:00:00-04:00", "TZ=America/New_York 0 1 * * *", "2012-11-04T01:00:00-05:00"),
    ("2012-11-04T01:00:00-05:00", "TZ=America/New_York 0 1 * * *", "2012-11-05T01:00:00-05:00"),
    ("2012-11-04T00:00:00-04:00", "TZ=America/New_York 0 2 * * *", "2012-11-04T02:00:00-05:00"),
    ("2012-11-04T00:00:00-04:00", "CRON_TZ=America/New_York 0 3 * * *", "2012-11-04T03:00:00-05:00"),
    # London, spring forward (2024-03-31 01:00 GMT -> 02:00 BST) and fall back (2024-10-27 02:00 BST ->
    # 01:00 GMT); London's standard offset is zero, which takes another branch of Go's time.Date.
    ("2024-03-31T00:00:00+00:00", "TZ=Europe/London 30 1 * * *", "2024-04-01T01:30:00+01:00"),
    ("2024-03-31T00:00:00+00:00", "TZ=Europe/London 0 * * * *", "2024-03-31T02:00:00+01:00"),
    ("2024-03-30T12:00:00+00:00", "TZ=Europe/London 30 1 31 Mar *", "2025-03-31T01:30:00+01:00"),
    ("2024-10-27T00:00:00+01:00", "TZ=Europe/London 30 1 * * *", "2024-10-27T01:30:00+01:00"),
    ("2024-10-27T01:30:00+01:00", "TZ=Europe/London 30 1 * * *", "2024-10-27T01:30:00+00:00"),
    ("2024-10-27T01:30:00+00:00", "TZ=Europe/London 30 1 * * *", "2024-10-28T01:30:00+00:00"),
    ("2024-10-27T00:00:00+01:00", "TZ=Europe/London 0 2 * * *", "2024-10-27T02:00:00+00:00"),
    ("2024-10-26T23:59:00+01:00", "TZ=Europe/London @daily", "2024-10-27T00:00:00+01:00"),
    # Sao Paulo 2018-11-04: midnight did not exist (00:00 -03 -> 01:00 -02): a midnight job skips that day
    # (the next 4 November midnight is in 2019, after Brazil dropped DST), an hourly one starts at 01:00.
    ("2018-11-03T12:00:00-03:00", "TZ=America/Sao_Paulo 0 0 4 Nov *", "2019-11-04T00:00:00-03:00"),
    ("2018-11-03T12:00:00-03:00", "TZ=America/Sao_Paulo 0 0 * * *", "2018-11-05T00:00:00-02:00"),
    ("2018-11-03T12:00:00-03:00", "TZ=America/Sao_Paulo 0 * 4 Nov *", "2018-11-04T01:00:00-02:00"),
    # A time zone with a daily schedule, from another zone's instant.
    ("2024-06-01T12:00:00+00:00", "TZ=Asia/Tokyo 0 9 * * *", "2024-06-02T09:00:00+09:00"),
]


@pytest.mark.parametrize(("now", "spec", "expected"), NEXT_CASES)
def test_next(now: str, spec: str, expected: str | None) -> None:
    got = parse_standard(spec).next(at(now), UTC)
    assert got == (None if expected is None else at(expected))


def test_without_a_zone_the_schedule_reads_the_zone_it_is_given() -> None:
    schedule = parse_standard("0 9 * * *")
    assert schedule.next(at("2024-06-01T12:00:00+00:00"), UTC) == at("2024-06-02T09:00:00+00:00")
    assert schedule.next(at("2024-06-01T12:00:00+00:00"), NY) == at("2024-06-01T09:00:00-04:00")


def test_fields_and_names() -> None:
    schedule = parse_standard("5,10-12 */6 1-15/7 jan-Mar,DEC sun,Sat")
    assert isinstance(schedule, SpecSchedule)
    assert schedule.minute == 1 << 5 | 1 << 10 | 1 << 11 | 1 << 12
    assert schedule.hour == 1 | 1 << 6 | 1 << 12 | 1 << 18
    assert schedule.dom == 1 << 1 | 1 << 8 | 1 << 15
    assert schedule.month == 1 << 1 | 1 << 2 | 1 << 3 | 1 << 12
    assert schedule.dow == 1 | 1 << 6
    every_minute, every_other_day = parse_standard("* * * * *"), parse_standard("* * */2 * *")
    assert isinstance(every_minute, SpecSchedule) and isinstance(every_other_day, SpecSchedule)
    assert every_minute.dom & (1 << 63)  # the star bit
    assert not every_other_day.dom & (1 << 63)  # */2 is restricted
    assert parse_standard("* * ? * *") == parse_standard("* * * * *")
    assert parse_standard("@every 1m") == EverySchedule(60)
    assert parse_standard("TZ=Europe/London @hourly").zone is LONDON  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "empty spec string"),
        ("xyz", "expected exactly 5 fields, found 1: [xyz]"),
        ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
        ("0 0 * * * *", "expected exactly 5 fields, found 6: [0 0 * * * *]"),
        ("60 * * * *", "end of range (60) above maximum (59): 60"),
        ("* 24 * * *", "end of range (24) above maximum (23): 24"),
        ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
        ("* * * * XYZ", 'failed to parse int from XYZ: strconv.Atoi: parsing "XYZ": invalid syntax'),
        ("0-0-0 * * * *", "too many hyphens: 0-0-0"),
        ("*/5/5 * * * *", "too many slashes: */5/5"),
        ("59-2 * * * *", "beginning of range (59) beyond end of range (2): 59-2"),
        ("*/0 * * * *", "step of range should be a positive number: */0"),
        ("-1 * * * *", "failed to parse int from : strconv.Atoi"),
        ("TZ=Bogus/Zone * * * * *", "provided bad location Bogus/Zone: unknown time zone Bogus/Zone"),
        ("@often", "unrecognized descriptor: @often"),
        ("@every 1d", 'failed to parse duration @every 1d: time: unknown unit "d" in duration "1d"'),
        ("@every", "unrecognized descriptor: @every"),
        ("@every 5", 'failed to parse duration @every 5: time: missing unit in duration "5"'),
    ],
)
def test_errors(spec: str, message: str) -> None:
    with pytest.raises(ScheduleError) as caught:
        parse_standard(spec)
    assert str(caught.value).startswith(message)


def test_go_durations() -> None:
    assert parse_duration("1h30m") == 5400 * 10**9
    assert parse_duration("1.5s") == 1_500_000_000
    assert parse_duration("-2m") == -120 * 10**9
    assert parse_duration("0") == 0
    assert parse_duration("300ms") == 300_000_000
    assert parse_duration("2µs") == parse_duration("2us") == 2000
    with pytest.raises(ValueError, match='time: invalid duration ""'):
        parse_duration("")


def test_go_date_picks_gos_offset_in_gaps_and_overlaps() -> None:
    assert date(2012, 3, 11, 2, 30, 0, NY) == at("2012-03-11T01:30:00-05:00")  # gap: the earlier side
    assert date(2024, 3, 31, 1, 30, 0, LONDON) == at("2024-03-31T02:30:00+01:00")  # gap: the later side
    assert date(2012, 11, 4, 1, 30, 0, NY) == at("2012-11-04T01:30:00-04:00")  # overlap: the first
    assert date(2024, 10, 27, 1, 30, 0, LONDON) == at("2024-10-27T01:30:00+00:00")  # overlap: the second
    assert date(2024, 1, 32, 0, 0, 0, UTC) == at("2024-02-01T00:00:00+00:00")  # normalised
    assert date(2024, 13, 1, 0, 0, 0, UTC) == at("2025-01-01T00:00:00+00:00")
