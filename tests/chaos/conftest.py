"""Options of the chaos run: `--chaos-duration SECONDS` (or AIOKCM_CHAOS_SECONDS) and `--chaos-seed N` (or
AIOKCM_CHAOS_SEED) to replay a run. The options exist when pytest is given this directory
(`pytest tests/chaos --chaos-duration 600`); the environment variables work from anywhere."""

from __future__ import annotations

import os
import random

import pytest

DEFAULT_SECONDS = 35.0
# kubesim and two managers start, then convergence and stop after the faults: time beyond the duration
OVERHEAD_SECONDS = 150.0


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("chaos")
    group.addoption("--chaos-duration", type=float, default=None, help="seconds of faults in the chaos run")
    group.addoption("--chaos-seed", type=int, default=None, help="seed of the chaos run's fault schedule")


def _option(config: pytest.Config, name: str) -> str | None:
    try:
        value = config.getoption(name)
    except ValueError:
        value = None
    return None if value is None else str(value)


def chaos_duration(config: pytest.Config) -> float:
    raw = _option(config, "chaos_duration") or os.environ.get("AIOKCM_CHAOS_SECONDS") or DEFAULT_SECONDS
    try:
        seconds = float(raw)
    except ValueError:
        raise pytest.UsageError(f"the chaos duration must be a number of seconds, got {raw!r}") from None
    if seconds <= 0:
        raise pytest.UsageError(f"the chaos duration must be positive, got {raw!r}")
    return seconds


def chaos_seed(config: pytest.Config) -> int:
    raw = _option(config, "chaos_seed") or os.environ.get("AIOKCM_CHAOS_SEED")
    if not raw:  # unset, or set empty (as `make chaos` does without CHAOS_SEED)
        return random.SystemRandom().randrange(1_000_000)
    try:
        return int(raw)
    except ValueError:
        raise pytest.UsageError(f"the chaos seed must be an integer, got {raw!r}") from None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The run's tests get a timeout that grows with the duration (the suite's default is too short)."""
    timeout = chaos_duration(config) + OVERHEAD_SECONDS
    for item in items:
        if "chaos_run" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.timeout(timeout))
