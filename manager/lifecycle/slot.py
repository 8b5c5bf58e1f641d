"""One enabled controller as the manager holds it: built at start-up or, when its construction or `setup()`
raises, built again by its supervisor with backoff, so a broken plugin neither stops start-up nor touches the
other controllers. While it cannot be built, its readiness check fails with the error (the supervisor's
crash report) and /debug/controllers shows it; once a build succeeds it runs like any other."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import structlog

log = structlog.get_logger(__name__)


class ControllerSlot:
    def __init__(self, name: str, build: Callable[[], Any]) -> None:
        self.name = name
        self._build = build  # cls(ctx), then its optional setup()
        self.instance: Any = None
        self.build_error: str | None = None

    def try_build(self) -> bool:
        """Build now (at start-up, before the informers start, so the handlers see the initial lists)."""
        try:
            self.instance = self._build()
        except Exception as exc:
            self.build_error = f"{type(exc).__name__}: {exc}"
            log.error(
                "controller failed to initialise; retrying with backoff",
                controller=self.name,
                error=self.build_error,
            )
            return False
        return True

    async def run(self) -> None:
        if self.instance is None:
            self.instance = self._build()  # raises: the supervisor records the crash and backs off
            self.build_error = None
            log.info("controller initialised", controller=self.name)
        await self.instance.run()

    def details(self) -> dict[str, Any]:
        if self.instance is None:
            return {"initialised": False, "initialise_error": self.build_error}
        details = getattr(self.instance, "debug_state", None)
        return details() if callable(details) else {}

    def sync_problem(self) -> str | None:
        problem = getattr(self.instance, "sync_problem", None)
        return problem() if callable(problem) else None

    async def drain(self) -> None:
        drain = getattr(self.instance, "drain", None)
        if callable(drain):
            await drain()
