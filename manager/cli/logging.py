"""Structured logging for the whole process, through structlog.

``configure_logging(fmt, level)`` renders every record as JSON (one object per line; the default when stderr
is not a terminal) or for humans (``console``). Records from stdlib loggers (aiohttp, kubernetes_asyncio,
asyncio) go through the same renderer, and context bound with
``structlog.contextvars.bound_contextvars(controller=..., key=...)`` appears on every record logged inside
it, from either kind of logger.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, TextIO

import orjson
import structlog
from structlog.typing import Processor

_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
}
# Chatty libraries: their INFO lines are per request; show them only when asked for debug.
_NOISY = ("aiohttp.access", "kubernetes_asyncio.client.rest")


def _orjson_dumps(obj: Any, default: Any = None, **_: Any) -> str:
    return orjson.dumps(obj, default=default or str).decode()


def resolve_format(fmt: str | None, stream: TextIO) -> str:
    """json or console; None picks console for a terminal and json otherwise."""
    if fmt:
        return fmt
    isatty = getattr(stream, "isatty", None)
    return "console" if isatty is not None and isatty() else "json"


def configure_logging(fmt: str | None = None, level: str = "info", stream: TextIO | None = None) -> str:
    """Configure structlog and the stdlib root logger; returns the format chosen."""
    out = stream if stream is not None else sys.stderr
    chosen = resolve_format(fmt, out)
    numeric_level = _LEVELS.get(level.lower(), logging.INFO)

    shared: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    renderer: Processor
    if chosen == "json":
        renderer = structlog.processors.JSONRenderer(serializer=_orjson_dumps)
        # Tracebacks as data, without local variables (they may hold tokens or whole objects).
        tracebacks = structlog.processors.ExceptionRenderer(
            structlog.tracebacks.ExceptionDictTransformer(show_locals=False)
        )
        final: list[Processor] = [tracebacks, renderer]
    else:
        # Plain tracebacks: the rich formatter renders every frame's locals, which blocks the loop when a
        # local holds a cache-sized list.
        renderer = structlog.dev.ConsoleRenderer(
            colors=resolve_format(None, out) == "console", exception_formatter=structlog.dev.plain_traceback
        )
        final = [renderer]

    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *shared,
            structlog.processors.StackInfoRenderer(),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[*shared, structlog.stdlib.ExtraAdder()],
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *final],
    )
    handler = logging.StreamHandler(out)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(numeric_level)
    for name in _NOISY:
        logging.getLogger(name).setLevel(numeric_level if numeric_level <= logging.DEBUG else logging.WARNING)
    logging.captureWarnings(True)
    return chosen
