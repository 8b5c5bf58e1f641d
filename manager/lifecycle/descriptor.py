"""What the Manager knows of a controller it runs: its names and its class (found by manager.cli.plugins)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ControllerInfo:
    """A discovered controller class and where it came from."""

    name: str
    aliases: tuple[str, ...]
    enabled_by_default: bool
    cls: type[Any]
    entry_point: str  # "name = module:attr", for messages
    distribution: str | None = None
    load_error: str | None = None  # the entry point could not be loaded: `cls` only raises this
