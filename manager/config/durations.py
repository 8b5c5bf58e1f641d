"""Go-style durations ("15s", "2m", "1h30m", "500ms", "1.5s") as used by kube-controller-manager flags.

A plain number (``"30"``, ``30``, ``2.5``) means seconds, so YAML files and environment variables may use
either.
"""

from __future__ import annotations

import re

# Longest units first so "ms" is not read as "m" followed by garbage.
_UNIT_SECONDS: dict[str, float] = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,  # micro sign, as Go accepts
    "μs": 1e-6,  # greek mu, as Go accepts
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_COMPONENT = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_PLAIN_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)")


class DurationError(ValueError):
    """The text is not a duration; the message quotes it and says what is accepted."""


def parse_duration(value: str | float | int) -> float:
    """Return `value` in seconds: a Go duration (sign, then number+unit pairs) or a plain number."""
    if isinstance(value, bool):  # bool is an int subclass; True seconds is never meant
        raise DurationError(f"invalid duration {value!r}")
    if isinstance(value, int | float):
        return float(value)
    text = value.strip()
    if _PLAIN_NUMBER.fullmatch(text):
        return float(text)
    sign = 1.0
    body = text
    if body[:1] in "+-" and body:
        sign = -1.0 if body[0] == "-" else 1.0
        body = body[1:]
    total = 0.0
    position = 0
    for match in _COMPONENT.finditer(body):
        if match.start() != position:
            break
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        position = match.end()
    if not body or position != len(body):
        raise DurationError(
            f'invalid duration "{value}" '
            '(use a number of seconds or Go units, e.g. "15s", "2m", "1h30m", "500ms")'
        )
    return sign * total


def format_duration(seconds: float) -> str:
    """Render seconds the way Go prints simple durations: 15.0 → "15s", 90 → "1m30s", 0.5 → "500ms"."""
    if seconds == 0:
        return "0s"
    sign = "-" if seconds < 0 else ""
    remaining = abs(seconds)
    if remaining < 1:
        return f"{sign}{remaining * 1000:g}ms"
    hours, remaining = divmod(remaining, 3600)
    minutes, remaining = divmod(remaining, 60)
    parts = []
    if hours:
        parts.append(f"{int(hours)}h")
    if minutes or (hours and remaining):
        parts.append(f"{int(minutes)}m")
    if remaining or not parts:
        parts.append(f"{remaining:g}s")
    return sign + "".join(parts)
