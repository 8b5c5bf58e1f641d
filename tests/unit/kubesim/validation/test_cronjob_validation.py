"""The API server's CronJob rules (pkg/apis/batch/validation: validateScheduleFormat, validateTimeZone and the
52-character name): robfig's parser decides the schedule, `TZ=` is refused on create, `timeZone` must load."""

from __future__ import annotations

from typing import Any

import pytest

from kubesim.admission.defaults import apply_defaults
from kubesim.validation.objects import validate


def _cronjob(name: str = "cj", **spec: Any) -> dict[str, Any]:
    pod_spec = {"containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "Never"}
    obj: dict[str, Any] = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "schedule": "*/5 * * * *",
            "jobTemplate": {"spec": {"template": {"spec": pod_spec}}},
            **spec,
        },
    }
    apply_defaults("cronjobs.batch", obj)
    return obj


def _messages(obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    return [f"{c['field']}: {c['message']}" for c in validate("cronjobs.batch", obj, old)]


@pytest.mark.parametrize(
    "schedule", ["*/5 * * * *", "0 0 * * SUN", "@hourly", "@every 1h30m", "0 0 ? JAN-Mar mon-fri"]
)
def test_valid_schedules(schedule: str) -> None:
    assert _messages(_cronjob(schedule=schedule)) == []


def test_schedule_errors_are_robfigs() -> None:
    assert _messages(_cronjob(schedule="off")) == [
        'spec.schedule: Invalid value: "off": expected exactly 5 fields, found 1: [off]'
    ]
    assert _messages(_cronjob(schedule="0 0 * * * *")) == [
        'spec.schedule: Invalid value: "0 0 * * * *": expected exactly 5 fields, found 6: [0 0 * * * *]'
    ]
    assert _messages(_cronjob(schedule="61 * * * *")) == [
        'spec.schedule: Invalid value: "61 * * * *": end of range (61) above maximum (59): 61'
    ]
    assert _messages(_cronjob(schedule="@every 1d")) == [
        'spec.schedule: Invalid value: "@every 1d": failed to parse duration @every 1d: '
        'time: unknown unit "d" in duration "1d"'
    ]


def test_tz_in_the_schedule_is_refused_on_create_and_kept_on_update() -> None:
    tz = _cronjob(schedule="TZ=UTC 0 0 * * *")
    assert _messages(tz) == [
        'spec.schedule: Invalid value: "TZ=UTC 0 0 * * *": '
        "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"
    ]
    assert _messages(tz, old=_cronjob(schedule="CRON_TZ=UTC 0 1 * * *")) == []  # already there: allowed
    both = _cronjob(schedule="TZ=UTC 0 0 * * *", timeZone="Europe/London")
    assert _messages(both, old=tz) == [
        'spec.schedule: Invalid value: "TZ=UTC 0 0 * * *": '
        "cannot use both timeZone field and TZ or CRON_TZ in schedule"
    ]


def test_time_zone() -> None:
    assert _messages(_cronjob(timeZone="Europe/London")) == []
    assert _messages(_cronjob(timeZone="Etc/UTC")) == []
    assert _messages(_cronjob(timeZone="Mars/Olympus")) == [
        'spec.timeZone: Invalid value: "Mars/Olympus": unknown time zone Mars/Olympus'
    ]
    assert _messages(_cronjob(timeZone="Local")) == [
        'spec.timeZone: Invalid value: "Local": '
        "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"
    ]
    assert _messages(_cronjob(timeZone="")) == [
        'spec.timeZone: Invalid value: "": timeZone must be nil or non-empty string'
    ]
    assert _messages(_cronjob(timeZone="../etc/passwd")) == [
        'spec.timeZone: Invalid value: "../etc/passwd": unknown time zone ../etc/passwd'
    ]


def test_name_at_most_52_characters_on_create() -> None:
    assert _messages(_cronjob("a" * 52)) == []
    assert _messages(_cronjob("a" * 53)) == [
        f'metadata.name: Invalid value: "{"a" * 53}": must be no more than 52 characters'
    ]
