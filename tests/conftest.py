"""Suite-wide settings for every test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import structlog


@pytest.fixture(autouse=True, scope="session")
def plain_tracebacks() -> Iterator[None]:
    """Logged exceptions render as plain text, as the manager's own logging renders them
    (manager/cli/logging.py). structlog's default rich tracebacks print every frame's locals, which blocks the
    event loop for 0.5-2 s per logged reconcile error; in a test the manager, kubesim and the test share
    that loop, so the stall shows up as a timing the test did not expect."""
    saved = structlog.get_config()
    processors = [
        structlog.dev.ConsoleRenderer(colors=False, exception_formatter=structlog.dev.plain_traceback)
        if isinstance(p, structlog.dev.ConsoleRenderer)
        else p
        for p in saved["processors"]
    ]
    structlog.configure(processors=processors)
    yield
    structlog.configure(**saved)
