"""Reflector backoff: 800 ms doubling to 30 s, jitter, reset after 2 quiet minutes (fake clock and rng)."""

from __future__ import annotations

import pytest

from manager.informers.backoff import Backoff


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_doubles_to_the_cap_without_jitter() -> None:
    clock = FakeClock()
    backoff = Backoff(jitter=0.0, clock=clock)
    delays = []
    for _ in range(9):
        delays.append(backoff.next_delay())
        clock.now += 1
    assert delays == pytest.approx([0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0, 30.0])


def test_jitter_adds_up_to_one_base() -> None:
    clock = FakeClock()
    assert Backoff(clock=clock, rng=lambda: 0.0).next_delay() == pytest.approx(0.8)
    assert Backoff(clock=clock, rng=lambda: 0.999).next_delay() == pytest.approx(0.8 * 1.999)
    backoff = Backoff(clock=clock, rng=lambda: 0.5)
    backoff.next_delay()
    assert backoff.next_delay() == pytest.approx(1.6 * 1.5)


def test_resets_after_two_quiet_minutes() -> None:
    clock = FakeClock()
    backoff = Backoff(jitter=0.0, clock=clock)
    for _ in range(5):
        backoff.next_delay()
        clock.now += 10
    assert backoff.next_delay() == pytest.approx(25.6)
    clock.now += 119.9
    assert backoff.next_delay() == pytest.approx(30.0)  # not quiet long enough
    clock.now += 120.0
    assert backoff.next_delay() == pytest.approx(0.8)
    assert backoff.next_delay() == pytest.approx(1.6)


def test_explicit_reset() -> None:
    backoff = Backoff(jitter=0.0, clock=FakeClock())
    backoff.next_delay()
    backoff.next_delay()
    backoff.reset()
    assert backoff.next_delay() == pytest.approx(0.8)


def test_copy_starts_fresh_with_the_same_parameters() -> None:
    clock = FakeClock()
    backoff = Backoff(initial=0.1, maximum=1.0, jitter=0.0, clock=clock)
    backoff.next_delay()
    backoff.next_delay()
    twin = backoff.copy()
    assert twin.next_delay() == pytest.approx(0.1)
    assert backoff.next_delay() == pytest.approx(0.4)
