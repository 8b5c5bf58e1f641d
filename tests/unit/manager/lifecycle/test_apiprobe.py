"""The API server probe's logic with a scripted client, a fake clock and a recording sleep: when the check
fails, what it says, when reflectors are woken, how often it probes, what the metrics show."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, cast

import pytest
from prometheus_client import REGISTRY

from manager.client.errors import ApiError, Forbidden
from manager.client.rest import ApiClient
from manager.lifecycle.apiprobe import ApiServerProbe


class ScriptedServer:
    """Answers `request_raw` from a script: None (200), an exception to raise, or "hang"."""

    host = "127.0.0.1:6443"

    def __init__(self, *outcomes: Any) -> None:
        self.outcomes = list(outcomes)
        self.paths: list[str] = []

    async def request_raw(self, method: str, path: str, **options: Any) -> bytes:
        self.paths.append(f"{method} {path}")
        outcome = self.outcomes.pop(0) if self.outcomes else None
        if outcome == "hang":
            await asyncio.Event().wait()
        if isinstance(outcome, BaseException):
            raise outcome
        return b"ok"


def probe_of(server: ScriptedServer, **options: Any) -> tuple[ApiServerProbe, list[float], list[str]]:
    now = [100.0]
    recovered: list[str] = []
    probe = ApiServerProbe(
        cast("ApiClient", server),
        clock=lambda: now[0],
        on_recovered=lambda: recovered.append("woken"),
        **options,
    )
    return probe, now, recovered


def refused() -> OSError:
    return ConnectionRefusedError(111, "Connection refused")


async def test_the_check_fails_after_the_threshold_and_says_why() -> None:
    server = ScriptedServer(refused(), refused(), refused(), None)
    probe, now, recovered = probe_of(server, failure_threshold=3)
    assert probe.health_check() is None  # nothing known yet
    for _ in range(2):
        assert await probe.probe_once() is False
        now[0] += 1.0
    assert probe.health_check() is None  # a blip is not an outage
    assert await probe.probe_once() is False
    now[0] += 4.0
    reason = probe.health_check()
    assert reason == (
        "API server 127.0.0.1:6443 not answering for 6s (3 probes failed; last: GET /readyz: "
        "ConnectionRefusedError: [Errno 111] Connection refused)"
    )
    assert server.paths == ["GET /readyz"] * 3
    assert recovered == []
    assert await probe.probe_once() is True
    assert probe.health_check() is None and recovered == ["woken"]  # every reflector retries now


async def test_only_the_first_success_after_a_failure_wakes_the_reflectors() -> None:
    probe, _, recovered = probe_of(ScriptedServer(None, refused(), None, None))
    for _ in range(4):
        await probe.probe_once()
    assert recovered == ["woken"]


@pytest.mark.parametrize(
    "answer, fails",
    [
        (ApiError(500, "InternalError", "etcd is down"), True),
        (Forbidden(403, "Forbidden", "no access to /readyz"), False),  # the server answered: it is up
    ],
)
async def test_an_answer_counts_unless_it_is_a_server_error(answer: ApiError, fails: bool) -> None:
    probe, _, _ = probe_of(ScriptedServer(answer), failure_threshold=1)
    assert await probe.probe_once() is not fails
    reason = probe.health_check()
    assert (reason is not None and "/readyz answered 500 InternalError: etcd is down" in reason) is fails


async def test_a_frozen_server_fails_the_probe_after_its_timeout() -> None:
    probe, _, _ = probe_of(ScriptedServer("hang"), timeout=0.05, failure_threshold=1)
    assert await asyncio.wait_for(probe.probe_once(), 5) is False
    assert "no answer to GET /readyz within 0.05s" in (probe.health_check() or "")


async def test_it_probes_every_interval_and_every_second_while_failing() -> None:
    server = ScriptedServer(None, refused(), refused(), None, None)
    naps: list[float] = []
    finished = asyncio.Event()

    async def sleep(delay: float) -> None:
        naps.append(delay)
        if len(naps) == 5:
            finished.set()
            await asyncio.Event().wait()

    probe = ApiServerProbe(cast("ApiClient", server), interval=5.0, sleep=sleep)
    await probe.start()
    await asyncio.wait_for(finished.wait(), 5)
    await probe.stop()
    assert naps == [5.0, 1.0, 1.0, 5.0, 5.0]
    assert probe.probes == 5


async def test_metrics_show_reachability_and_the_last_success() -> None:
    sample: Callable[[str], float | None] = REGISTRY.get_sample_value
    probe, _, _ = probe_of(ScriptedServer(None, refused()))
    failures = sample("apiserver_probe_failures_total") or 0.0
    await probe.probe_once()
    assert sample("apiserver_probe_reachable") == 1.0
    assert (sample("apiserver_probe_last_success_timestamp_seconds") or 0) > 1.7e9
    await probe.probe_once()
    assert sample("apiserver_probe_reachable") == 0.0
    assert sample("apiserver_probe_failures_total") == failures + 1


@pytest.mark.parametrize("options", [{"interval": 0}, {"timeout": -1}, {"failure_threshold": 0}])
def test_nonsensical_settings_are_refused(options: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="probe interval"):
        ApiServerProbe(cast("ApiClient", ScriptedServer()), **options)


async def run_rounds(probe: ApiServerProbe, rounds: int, between: Callable[[int], None]) -> list[float]:
    """Start `probe`, call `between(i)` before its i-th nap returns, stop after `rounds` naps."""
    naps: list[float] = []
    finished = asyncio.Event()

    async def sleep(delay: float) -> None:
        naps.append(delay)
        if len(naps) == rounds:
            finished.set()
            await asyncio.Event().wait()
        between(len(naps))

    probe._sleep = sleep
    await probe.start()
    await asyncio.wait_for(finished.wait(), 5)
    await probe.stop()
    return naps


async def test_a_probe_is_skipped_while_other_answers_show_the_server_up() -> None:
    server = ScriptedServer()
    heard: list[float | None] = [None]
    probe, now, _ = probe_of(server, interval=5.0, last_answer=lambda: heard[0])

    def five_seconds_on(i: int) -> None:
        now[0] += 5.0
        if i in (1, 2):
            heard[0] = now[0] - 1.0  # a controller's request answered a second before this round

    await run_rounds(probe, 4, five_seconds_on)
    # the first probe is sent (nothing heard yet); rounds two and three are skipped; the fourth finds the
    # last answer 6 s old and probes again
    assert server.paths == ["GET /readyz"] * 2
    assert (probe.probes, probe.skipped) == (2, 2)
    assert REGISTRY.get_sample_value("apiserver_probe_reachable") == 1.0


async def test_the_probes_own_answer_does_not_skip_the_next_probe() -> None:
    server = ScriptedServer()
    now = [100.0]
    own: list[float | None] = [None]
    original = server.request_raw

    async def answered(method: str, path: str, **options: Any) -> bytes:
        body = await original(method, path, **options)
        own[0] = now[0]  # the transport records every answer, the probe's own included
        return body

    server.request_raw = answered  # type: ignore[method-assign]
    probe = ApiServerProbe(
        cast("ApiClient", server), interval=5.0, clock=lambda: now[0], last_answer=lambda: own[0]
    )

    def early(i: int) -> None:
        now[0] += 4.9  # a timer may fire a little before the interval is up

    await run_rounds(probe, 3, early)
    assert probe.probes == 3 and probe.skipped == 0


async def test_while_failing_every_probe_is_sent_whatever_else_answered() -> None:
    server = ScriptedServer(refused(), refused(), None)
    heard: list[float | None] = [None]
    probe, now, recovered = probe_of(server, interval=5.0, last_answer=lambda: heard[0])

    def one_second_on(i: int) -> None:
        now[0] += 1.0
        heard[0] = now[0] - 0.5  # something else keeps getting answers (a flaky path, another replica)

    naps = await run_rounds(probe, 3, one_second_on)
    assert server.paths == ["GET /readyz"] * 3 and probe.skipped == 0
    assert naps == [1.0, 1.0, 5.0] and recovered == ["woken"]
