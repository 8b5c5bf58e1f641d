"""The chaos run: two manager replicas and kubesim under a seeded schedule of faults, with a workload of
Jobs, a scaled ReplicaSet and a rolled Deployment; one run, judged by the tests below.

Replay a failure with `pytest tests/chaos --chaos-seed N`; run longer with `--chaos-duration 600`.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from tests.chaos.conftest import chaos_duration, chaos_seed
from tests.chaos.runner import ChaosResult, ChaosRun

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def chaos_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> ChaosResult:
    seed, duration = chaos_seed(request.config), chaos_duration(request.config)
    keep = os.environ.get("AIOKCM_CHAOS_DIR")  # pytest keeps only its last three temporary directories
    if keep:
        workdir = Path(keep) / f"chaos-{seed}-{int(time.time())}"
        workdir.mkdir(parents=True)
    else:
        workdir = tmp_path_factory.mktemp(f"chaos-{seed}")
    return asyncio.run(ChaosRun(seed, duration, workdir).run())


def _replay(result: ChaosResult) -> str:
    steps = "\n".join(step.describe() for step in result.steps)
    return f"{result.summary()}\nreplay with --chaos-seed {result.seed}; the schedule was:\n{steps}"


def test_the_schedule_disturbed_the_cluster(chaos_run: ChaosResult) -> None:
    """A run that checked nothing would pass everything: the watch saw the workload, and leadership moved."""
    assert chaos_run.events_checked > 100, _replay(chaos_run)
    assert chaos_run.attributed_writes > 0, _replay(chaos_run)


def test_invariants_hold_at_every_event(chaos_run: ChaosResult) -> None:
    allowed = [f"allowed: {line}" for line in chaos_run.lagging_status]  # the nearest cousins, to compare
    assert not chaos_run.violations, "\n".join([*chaos_run.violations, *allowed, _replay(chaos_run)])


def test_everything_converges_once_the_faults_stop(chaos_run: ChaosResult) -> None:
    assert not chaos_run.unfinished, "\n".join([*chaos_run.unfinished, _replay(chaos_run)])


def test_no_write_from_a_replica_that_is_not_the_leader(chaos_run: ChaosResult) -> None:
    """Also the invariants broken while two replicas wrote, and the Jobs that ran then and did not end as
    asked: consequences of the stale writes."""
    stale = [
        *chaos_run.non_leader_writes[:20],
        *chaos_run.split_brain_violations,
        *chaos_run.split_brain_unfinished,
    ]
    assert not stale, "\n".join([*stale, _replay(chaos_run)])
