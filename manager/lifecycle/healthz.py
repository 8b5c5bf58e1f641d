"""Named health checks served as /healthz, /livez and /readyz in the Kubernetes format.

A check is a plain callable, sync or async, returning None when healthy or a reason string when not.
Reasons are logged; the aggregated bodies say ``reason withheld`` as Kubernetes does, except for checks
added with ``show_reason=True`` (the API server probe, the informers), whose reason is shown with
``?verbose``: those reasons name only the API server and resources, and an operator asking why the manager
is unready should not have to search the logs. One line each, at most `MAX_REASON` characters.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass

import structlog

Check = Callable[[], str | Awaitable[str | None] | None]
ENDPOINTS = ("healthz", "livez", "readyz")
MAX_REASON = 500

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class _Registered:
    name: str
    check: Check
    endpoints: frozenset[str]
    show_reason: bool


@dataclass(frozen=True)
class CheckResult:
    name: str
    reason: str | None  # None: passed
    excluded: bool = False
    show_reason: bool = False  # in verbose bodies; otherwise "reason withheld"


@dataclass(frozen=True)
class Report:
    """The outcome of one aggregated endpoint: per-check results plus excludes that matched nothing."""

    endpoint: str
    results: tuple[CheckResult, ...]
    unmatched_excludes: tuple[str, ...]

    @property
    def passed(self) -> bool:
        return all(result.reason is None for result in self.results)

    def body(self, verbose: bool) -> str:
        """The response body: ``ok``, or one line per check and a verdict (always detailed on failure)."""
        if self.passed and not verbose:
            return "ok"
        lines = []
        for result in self.results:
            if result.excluded:
                lines.append(f"[+]{result.name} excluded: ok")
            elif result.reason is None:
                lines.append(f"[+]{result.name} ok")
            elif verbose and result.show_reason:
                lines.append(f"[-]{result.name} failed: {_one_line(result.reason)}")
            else:
                lines.append(f"[-]{result.name} failed: reason withheld")
        if self.unmatched_excludes:
            quoted = ", ".join(f'"{name}"' for name in self.unmatched_excludes)
            lines.append(f"warn: some health checks cannot be excluded: no matches for {quoted}")
        verdict = "passed" if self.passed else "failed"
        lines.append(f"{self.endpoint} check {verdict}")
        return "\n".join(lines) + "\n"


def _one_line(reason: str) -> str:
    text = " ".join(reason.split())
    return text if len(text) <= MAX_REASON else text[: MAX_REASON - 3] + "..."


class HealthChecks:
    """The registry of named checks; each check is served on the endpoints it was added for."""

    def __init__(self, timeout: float = 10.0) -> None:
        self._checks: dict[str, _Registered] = {}
        self._timeout = timeout
        self._last_reason: dict[str, str | None] = {}

    def add(
        self,
        name: str,
        check: Check,
        *,
        livez: bool = True,
        readyz: bool = True,
        healthz: bool = True,
        show_reason: bool = False,
    ) -> None:
        """Register `check` under `name` (unique) for the chosen endpoints; `show_reason` serves its
        reason in verbose aggregated bodies (never pass it for a check whose reason may hold secrets)."""
        if not name or "/" in name:
            raise ValueError(f"invalid health check name {name!r}")
        if name in self._checks:
            raise ValueError(f'health check "{name}" is already registered')
        chosen = {"healthz": healthz, "livez": livez, "readyz": readyz}
        endpoints = frozenset(endpoint for endpoint, wanted in chosen.items() if wanted)
        self._checks[name] = _Registered(name, check, endpoints, show_reason)

    def remove(self, name: str) -> None:
        self._checks.pop(name, None)
        self._last_reason.pop(name, None)

    def names(self, endpoint: str = "healthz") -> list[str]:
        return [c.name for c in self._checks.values() if endpoint in c.endpoints]

    def has(self, name: str, endpoint: str = "healthz") -> bool:
        registered = self._checks.get(name)
        return registered is not None and endpoint in registered.endpoints

    async def run_one(self, name: str) -> str | None:
        """Run one check; an exception or a timeout counts as a failure with that reason."""
        registered = self._checks[name]
        try:
            outcome = registered.check()
            if inspect.isawaitable(outcome):
                async with asyncio.timeout(self._timeout):
                    outcome = await outcome
        except TimeoutError:
            outcome = f"timed out after {self._timeout:g}s"
        except Exception as exc:
            outcome = f"{type(exc).__name__}: {exc}"
        reason = None if outcome is None else str(outcome)
        if reason != self._last_reason.get(name):  # log transitions only; probes come every few seconds
            if reason is None:
                log.info("health check recovered", check=name)
            else:
                log.warning("health check failing", check=name, reason=reason)
            self._last_reason[name] = reason
        return reason

    async def evaluate(self, endpoint: str, exclude: Iterable[str] = ()) -> Report:
        """Run every check of `endpoint` except the excluded ones, in registration order."""
        excluded = set(exclude)
        selected: Sequence[_Registered] = [c for c in self._checks.values() if endpoint in c.endpoints]
        results = []
        for registered in selected:
            if registered.name in excluded:
                excluded.discard(registered.name)
                results.append(CheckResult(registered.name, None, excluded=True))
            else:
                reason = await self.run_one(registered.name)
                results.append(CheckResult(registered.name, reason, show_reason=registered.show_reason))
        return Report(endpoint, tuple(results), tuple(sorted(excluded)))
