"""metav1.Time as the API server writes it, for Events, conditions and status timestamps."""

from __future__ import annotations

import datetime

# The last second formatted and its text: timestamps come in bursts within one second (an Event burst, a
# sync stamping startTime and conditions) and strftime is most of the cost. One tuple, so a reader never
# sees a second with another's text.
_last_formatted: tuple[int, str] = (-1, "")


def format_time(seconds: float) -> str:
    """Epoch seconds as metav1.Time: RFC 3339, second precision, UTC with `Z`."""
    global _last_formatted
    whole = int(seconds // 1)
    if _last_formatted[0] != whole:
        text = datetime.datetime.fromtimestamp(whole, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        _last_formatted = (whole, text)
    return _last_formatted[1]
