"""mostRecentScheduleTime and nextScheduleTimeDuration (upstream utils.go), instantly: long gaps, more than
100 missed times, startingDeadlineSeconds, DST and the sub-second interval check; the Job made from a
CronJob."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from controllers.cronjob.jobs import job_from_template, job_name, rfc1123z, rfc3339, to_delete
from controllers.cronjob.schedule import (
    InvalidScheduleError,
    Missed,
    format_schedule,
    most_recent_schedule_time,
    next_schedule_delay,
)
from cronschedule import load_location, parse_standard


def at(text: str) -> float:
    return datetime.datetime.fromisoformat(text).timestamp()


def cj(created: str, last: str | None = None, **spec: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "metadata": {"name": "cj", "namespace": "ns", "uid": "u1", "creationTimestamp": created},
        "spec": {"schedule": "0 * * * *", **spec},
        "status": {},
    }
    if last:
        obj["status"]["lastScheduleTime"] = last
    return obj


def recent(obj: dict[str, Any], now: str, sds: bool = True) -> tuple[float | None, Missed]:
    schedule = parse_standard(format_schedule(obj))
    found = most_recent_schedule_time(obj, at(now), schedule, include_starting_deadline=sds)
    return found.time, found.missed


def test_nothing_due_before_the_first_time() -> None:
    assert recent(cj("2024-01-01T10:10:00Z"), "2024-01-01T10:59:59Z") == (None, Missed.NONE)


def test_one_due() -> None:
    assert recent(cj("2024-01-01T10:10:00Z"), "2024-01-01T11:00:00Z") == (
        at("2024-01-01T11:00:00Z"),
        Missed.NONE,
    )


def test_several_missed_only_the_most_recent_is_returned() -> None:
    obj = cj("2024-01-01T00:00:00Z", last="2024-01-01T10:00:00Z")
    assert recent(obj, "2024-01-01T15:30:00Z") == (at("2024-01-01T15:00:00Z"), Missed.FEW)


def test_more_than_100_missed() -> None:
    obj = cj("2024-01-01T00:00:00Z", last="2024-01-01T00:00:00Z")
    assert recent(obj, "2024-01-09T12:30:00Z") == (at("2024-01-09T12:00:00Z"), Missed.MANY)  # 204 missed
    yearly = cj("2000-01-01T00:00:00Z", schedule="* * * * *")  # decades of minutes, computed at once
    assert recent(yearly, "2024-06-01T12:34:56Z") == (at("2024-06-01T12:34:00Z"), Missed.MANY)


def test_starting_deadline_clamps_the_window() -> None:
    obj = cj("2024-01-01T00:00:00Z", last="2024-01-01T10:00:00Z", startingDeadlineSeconds=600)
    # 15:00 is 30 minutes old, the deadline 10: no run, and no MissSchedule (the window simply moved).
    assert recent(obj, "2024-01-01T15:30:00Z") == (None, Missed.NONE)
    assert recent(obj, "2024-01-01T15:05:00Z") == (at("2024-01-01T15:00:00Z"), Missed.NONE)
    # Ignoring the deadline (the requeue computation) the 15:00 run is the most recent.
    assert recent(obj, "2024-01-01T15:30:00Z", sds=False)[0] == at("2024-01-01T15:00:00Z")
    many = cj("2000-01-01T00:00:00Z", startingDeadlineSeconds=200, schedule="* * * * *")
    assert recent(many, "2024-06-01T12:34:56Z") == (at("2024-06-01T12:34:00Z"), Missed.FEW)


def test_dst_with_time_zone() -> None:
    # 02:30 New York does not exist on 2024-03-10: a daily 02:30 skips that day.
    obj = cj("2024-03-09T12:00:00Z", last="2024-03-09T07:30:00Z", schedule="30 2 * * *")
    obj["spec"]["timeZone"] = "America/New_York"
    assert recent(obj, "2024-03-10T12:00:00-04:00") == (None, Missed.NONE)
    assert recent(obj, "2024-03-11T02:30:00-04:00") == (at("2024-03-11T02:30:00-04:00"), Missed.NONE)
    # 01:30 London happens twice on 2024-10-27: both run.
    london = cj("2024-10-26T12:00:00Z", last="2024-10-27T00:30:00Z", schedule="30 1 * * *")
    london["spec"]["timeZone"] = "Europe/London"
    assert recent(london, "2024-10-27T01:31:00Z") == (at("2024-10-27T01:30:00Z"), Missed.NONE)


def test_unsatisfiable_schedule_is_invalid() -> None:
    obj = cj("2024-01-01T00:00:00Z", schedule="0 0 30 2 *")
    with pytest.raises(InvalidScheduleError, match="less than 1 second"):
        recent(obj, "2024-06-01T00:00:00Z")


def test_every_second_is_allowed_by_the_interval_check() -> None:
    obj = cj("2024-01-01T00:00:00Z", last="2024-01-01T00:00:00Z", schedule="@every 1s")
    assert recent(obj, "2024-01-01T00:00:05.5Z") == (at("2024-01-01T00:00:05Z"), Missed.FEW)


def test_next_schedule_delay() -> None:
    schedule = parse_standard("0 * * * *")
    obj = cj("2024-01-01T10:10:00Z")
    assert next_schedule_delay(obj, at("2024-01-01T10:20:00Z"), schedule) == pytest.approx(40 * 60 + 0.1)
    obj = cj("2024-01-01T00:00:00Z", last="2024-01-01T10:00:00Z")
    assert next_schedule_delay(obj, at("2024-01-01T15:30:00Z"), schedule) == pytest.approx(30 * 60 + 0.1)
    never = parse_standard("0 0 30 2 *")
    assert next_schedule_delay(cj("2024-01-01T00:00:00Z"), at("2024-01-02T00:00:00Z"), never) is None


def test_format_schedule() -> None:
    assert (
        format_schedule(cj("2024-01-01T00:00:00Z", timeZone="Europe/London")) == "TZ=Europe/London 0 * * * *"
    )
    assert format_schedule(cj("2024-01-01T00:00:00Z", timeZone="Bogus/Zone")) == "0 * * * *"
    tz = cj("2024-01-01T00:00:00Z", schedule="TZ=UTC 0 * * * *", timeZone="Europe/London")
    assert format_schedule(tz) == "TZ=UTC 0 * * * *"


def test_job_from_template() -> None:
    obj = cj("2024-01-01T00:00:00Z")
    obj["spec"]["jobTemplate"] = {
        "metadata": {"labels": {"a": "b"}, "annotations": {"c": "d"}},
        "spec": {"template": {"spec": {"containers": []}}},
    }
    scheduled = at("2024-07-01T12:00:00Z")
    job = job_from_template(obj, scheduled, load_location("Europe/London"))
    assert job["metadata"]["name"] == job_name("cj", scheduled) == f"cj-{int(scheduled) // 60}"
    assert job["metadata"]["labels"] == {"a": "b"}
    assert job["metadata"]["annotations"] == {
        "c": "d",
        "batch.kubernetes.io/cronjob-scheduled-timestamp": "2024-07-01T13:00:00+01:00",
    }
    assert job["spec"] == obj["spec"]["jobTemplate"]["spec"]
    assert job["spec"] is not obj["spec"]["jobTemplate"]["spec"]
    assert rfc3339(scheduled, datetime.UTC) == "2024-07-01T12:00:00Z"
    assert rfc3339(at("2024-01-01T12:00:00Z"), load_location("Europe/London")) == "2024-01-01T12:00:00Z"
    assert rfc1123z(scheduled) == "Mon, 01 Jul 2024 12:00:00 +0000"


def test_history_deletes_the_oldest_beyond_the_limit() -> None:
    def job(name: str, start: str | None) -> dict[str, Any]:
        return {"metadata": {"name": name}, "status": {"startTime": start} if start else {}}

    jobs = [
        job("c", "2024-01-01T00:03:00Z"),
        job("a", "2024-01-01T00:01:00Z"),
        job("n", None),
        job("b", None),
    ]
    assert [j["metadata"]["name"] for j in to_delete(jobs, 1)] == ["a", "c", "b"]
    assert to_delete(jobs, 4) == []
    assert [j["metadata"]["name"] for j in to_delete(jobs, 0)] == ["a", "c", "b", "n"]
