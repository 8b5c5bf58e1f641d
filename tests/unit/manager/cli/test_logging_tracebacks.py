"""Console logs render plain tracebacks: frame locals (caches, tokens) never reach the log."""

from __future__ import annotations

import io
import logging

import structlog

from manager.cli.logging import configure_logging


def test_console_traceback_has_no_frame_locals() -> None:
    stream = io.StringIO()
    configure_logging("console", "info", stream=stream)
    try:
        secret_cache = ["local-value-that-must-not-be-logged"] * 3  # noqa: F841 - a frame local
        raise RuntimeError("boom")
    except RuntimeError:
        structlog.get_logger("test").exception("reconcile failed")
    finally:
        logging.getLogger().handlers.clear()
    out = stream.getvalue()
    assert "RuntimeError: boom" in out
    assert "reconcile failed" in out
    assert "local-value-that-must-not-be-logged" not in out
