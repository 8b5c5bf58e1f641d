"""ControllerExpectations: kube-controller-manager's controller_utils expectations, with a fake clock."""

from __future__ import annotations

from manager.controller.expectations import EXPECTATIONS_TIMEOUT, ControllerExpectations


class Ticks:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_unknown_key_is_satisfied() -> None:
    assert ControllerExpectations().satisfied("ns/rs")


def test_creations_must_all_be_observed() -> None:
    exp = ControllerExpectations(clock=Ticks())
    exp.expect_creations("ns/rs", 3)
    for _ in range(2):
        assert not exp.satisfied("ns/rs")
        exp.creation_observed("ns/rs")
    assert not exp.satisfied("ns/rs")
    exp.creation_observed("ns/rs")
    assert exp.satisfied("ns/rs")


def test_lower_on_failed_creates() -> None:
    exp = ControllerExpectations(clock=Ticks())
    exp.expect_creations("k", 5)
    exp.lower("k", 3, 0)  # three creates failed: they will never be observed
    exp.creation_observed("k")
    assert not exp.satisfied("k")
    exp.creation_observed("k")
    assert exp.satisfied("k")


def test_counted_deletions() -> None:
    exp = ControllerExpectations(clock=Ticks())
    exp.expect_deletions("k", 2)
    exp.deletion_observed("k")
    assert not exp.satisfied("k")
    exp.deletion_observed("k")
    assert exp.satisfied("k")


def test_tracked_deletions_count_each_key_once_and_only_tracked_keys() -> None:
    exp = ControllerExpectations(clock=Ticks())
    exp.expect_deletions("k", ["ns/p1", "ns/p2"])
    exp.deletion_observed("k", "ns/p1")
    exp.deletion_observed("k", "ns/p1")  # a duplicate event (update with deletionTimestamp, then delete)
    exp.deletion_observed("k", "ns/other")  # not one we asked to delete
    exp.deletion_observed("k")  # keyless observation cannot be attributed
    assert not exp.satisfied("k")
    exp.deletion_observed("k", "ns/p2")
    assert exp.satisfied("k")
    entry = exp.get("k")
    assert entry is not None and entry.deletes == 0 and not entry.deleting_keys


def test_expired_expectations_count_as_satisfied() -> None:
    ticks = Ticks()
    exp = ControllerExpectations(clock=ticks)
    exp.expect_creations("k", 1)
    ticks.now += EXPECTATIONS_TIMEOUT
    assert not exp.satisfied("k")  # not yet *older* than the timeout
    ticks.now += 0.001
    assert exp.satisfied("k")
    exp.expect_creations("k", 1)  # setting again restarts the clock
    assert not exp.satisfied("k")


def test_delete_forgets_and_raise_adds() -> None:
    exp = ControllerExpectations(clock=Ticks())
    exp.expect_creations("k", 1)
    exp.raise_expectations("k", 1, 1)
    exp.creation_observed("k")
    assert not exp.satisfied("k")
    exp.delete("k")
    assert exp.satisfied("k") and len(exp) == 0
    exp.creation_observed("k")  # observing an unknown key is harmless
    assert exp.get("k") is None


def test_timeout_is_five_minutes() -> None:
    assert EXPECTATIONS_TIMEOUT == 300.0
