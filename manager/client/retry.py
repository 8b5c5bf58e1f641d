"""When the client retries a request, as client-go does: pure decisions, no I/O.

- 429 and 5xx answers carrying Retry-After are retried for every verb (the server asked for it and did not
  process the request); a 429 without a hint waits 1 s.
- Connection failures before anything was sent are retried for every verb; failures after the request was
  written only for GETs (the server may have processed a write).
"""

from __future__ import annotations

import random

from manager.client.errors import ApiError, TooManyRequests
from manager.client.http11 import ConnectError, Disconnected

# Failures where nothing reached the server (any verb may be retried), and where it may have.
NOT_SENT: tuple[type[Exception], ...] = (ConnectError,)
MAYBE_SENT: tuple[type[Exception], ...] = (Disconnected,)


def connection_backoff(attempt: int) -> float:
    """Seconds before retry number `attempt` (1-based) after a connection failure: 0.1 s doubling to 5 s,
    with up to 100 % jitter so that many clients do not come back at once."""
    return float(min(5.0, 0.1 * 2 ** (attempt - 1)) * (1 + random.random()))


def retry_after(header: str | None, error: ApiError, max_wait: float) -> float | None:
    """Seconds to wait before retrying an error answer, or None when it must not be retried."""
    seconds: float | None = None
    if header is not None:
        try:
            seconds = max(0.0, float(header))
        except ValueError:
            seconds = None
    if seconds is None:
        seconds = error.retry_after_seconds
    if isinstance(error, TooManyRequests):
        return min(max_wait, seconds if seconds is not None else 1.0)
    if error.status >= 500 and header is not None and seconds is not None:
        return min(max_wait, seconds)
    return None
