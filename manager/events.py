"""core/v1 Event recording (filled in below)."""

from __future__ import annotations

from typing import Any


class EventRecorder:
    """Records core/v1 Events about objects; `event()` never blocks and never raises."""

    def event(self, obj: dict[str, Any], type: str, reason: str, message: str) -> None:
        raise NotImplementedError
