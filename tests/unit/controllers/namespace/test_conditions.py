"""The five namespace deletion conditions: OK forms, failing forms, and when lastTransitionTime moves."""

from __future__ import annotations

from typing import Any

from controllers.namespace.conditions import (
    CONDITION_TYPES,
    CONTENT_FAILURE,
    CONTENT_REMAINING,
    DISCOVERY_FAILURE,
    FINALIZERS_REMAINING,
    OK_FORMS,
    ConditionUpdater,
)
from manager import format_time

T0, T1 = 1_700_000_000.0, 1_700_000_100.0


def by_type(status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in status["conditions"]}


def test_a_clean_pass_writes_all_five_in_their_ok_form_once() -> None:
    status: dict[str, Any] = {"phase": "Terminating"}
    assert ConditionUpdater().apply(status, T0)
    found = by_type(status)
    assert list(found) == list(CONDITION_TYPES)
    for ctype, (reason, message) in OK_FORMS.items():
        assert found[ctype] == {
            "type": ctype,
            "status": "False",
            "lastTransitionTime": format_time(T0),
            "reason": reason,
            "message": message,
        }
    assert not ConditionUpdater().apply(status, T1)  # nothing changed: no UpdateStatus


def test_failures_and_leftovers_with_sorted_messages() -> None:
    updater = ConditionUpdater()
    updater.discovery_failed({"metrics.k8s.io/v1beta1": "503 ServiceUnavailable", "a.io/v1": "boom"})
    updater.delete_content_failed("z failed")
    updater.delete_content_failed("a failed")
    updater.content_totals({"pods.": 2, "widgets.example.io": 1, "configmaps.": 0}, {"b/f": 1, "a/f": 3})
    status: dict[str, Any] = {}
    updater.apply(status, T0)
    found = by_type(status)
    assert (found[DISCOVERY_FAILURE]["status"], found[DISCOVERY_FAILURE]["reason"]) == (
        "True",
        "DiscoveryFailed",
    )
    assert found[DISCOVERY_FAILURE]["message"] == (
        "Discovery failed for some groups, 2 failing: unable to retrieve the complete list of server APIs: "
        "a.io/v1: boom, metrics.k8s.io/v1beta1: 503 ServiceUnavailable"
    )
    assert (found[CONTENT_FAILURE]["reason"], found[CONTENT_FAILURE]["message"]) == (
        "ContentDeletionFailed",
        "Failed to delete all resource types, 2 remaining: a failed, z failed",
    )
    assert (found[CONTENT_REMAINING]["reason"], found[CONTENT_REMAINING]["message"]) == (
        "SomeResourcesRemain",
        "Some resources are remaining: pods. has 2 resource instances, "
        "widgets.example.io has 1 resource instances",
    )
    assert (found[FINALIZERS_REMAINING]["reason"], found[FINALIZERS_REMAINING]["message"]) == (
        "SomeFinalizersRemain",
        "Some content in the namespace has finalizers remaining: a/f in 3 resource instances, "
        "b/f in 1 resource instances",
    )


def test_discovery_failing_as_a_whole_reports_the_error_text() -> None:
    updater = ConditionUpdater()
    updater.discovery_failed(error="connection refused")
    status: dict[str, Any] = {}
    updater.apply(status, T0)
    assert by_type(status)[DISCOVERY_FAILURE]["message"] == "connection refused"


def test_transition_time_moves_only_when_the_status_flips() -> None:
    status: dict[str, Any] = {}
    first = ConditionUpdater()
    first.content_totals({"configmaps.": 2}, {})
    first.apply(status, T0)

    fewer = ConditionUpdater()
    fewer.content_totals({"configmaps.": 1}, {})
    assert fewer.apply(status, T1)  # the message changed: written, same transition time
    remaining = by_type(status)[CONTENT_REMAINING]
    assert remaining["message"].endswith("configmaps. has 1 resource instances")
    assert remaining["lastTransitionTime"] == format_time(T0)

    assert ConditionUpdater().apply(status, T1)  # all gone: status flips to False
    remaining = by_type(status)[CONTENT_REMAINING]
    assert (remaining["status"], remaining["lastTransitionTime"]) == ("False", format_time(T1))
    assert by_type(status)[DISCOVERY_FAILURE]["lastTransitionTime"] == format_time(T0)  # never flipped


def test_other_conditions_are_kept_and_the_input_list_is_not_mutated() -> None:
    other = {"type": "Example", "status": "True"}
    conditions = [other]
    status: dict[str, Any] = {"conditions": conditions}
    ConditionUpdater().apply(status, T0)
    assert status["conditions"][0] == other and len(status["conditions"]) == 6
    assert conditions == [other]
