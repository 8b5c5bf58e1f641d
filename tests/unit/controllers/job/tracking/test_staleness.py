"""Deferring a sync until the Job cache shows the controller's own last status write."""

from __future__ import annotations

from controllers.job.tracking.staleness import SAFETY_NET_DELAY, StaleWrites


def make() -> tuple[StaleWrites, list[str], list[tuple[str, float]]]:
    now: list[str] = []
    later: list[tuple[str, float]] = []
    return StaleWrites(now.append, lambda key, delay: later.append((key, delay))), now, later


def test_sync_on_stale_cache_is_deferred_until_the_update_arrives() -> None:
    stale, now, later = make()
    stale.wrote("ns/j", "10")  # our write replaced RV 10 (the server answered with, say, 11)
    stale.wrote("ns/j", "11")  # a second write in the same sync replaced 11
    assert stale.defer_if_stale("ns/j", "10") and stale.defer_if_stale("ns/j", "11")
    assert later == [("ns/j", SAFETY_NET_DELAY)] * 2
    stale.observed("ns/j", "11")  # an intermediate version: still not caught up
    assert now == []
    stale.observed("ns/j", "12")
    assert now == ["ns/j"]
    assert not stale.defer_if_stale("ns/j", "12")
    stale.observed("ns/j", "13")
    assert now == ["ns/j"]  # nothing was deferred any more


def test_fresh_or_unknown_caches_are_not_deferred() -> None:
    stale, _, _ = make()
    assert not stale.defer_if_stale("ns/j", "5")
    stale.wrote("ns/j", "5")
    assert not stale.defer_if_stale("ns/other", "5") and not stale.defer_if_stale("ns/j", None)
    stale.forget("ns/j")
    assert not stale.defer_if_stale("ns/j", "5")
