"""kube-controller-manager's ``--controllers`` grammar.

Items are read in order: ``name`` enables, ``-name`` disables, and the first explicit mention of a
controller wins; ``*`` enables every controller that is on by default. A controller nobody mentions is on
only when ``*`` is present and it is on by default. Aliases are translated to canonical names, also after
``-``. An unknown name is an error worded as kube-controller-manager words it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol, TypeVar


class KnownController(Protocol):
    """What the grammar needs to know about a controller (registry.ControllerInfo satisfies it)."""

    @property
    def name(self) -> str: ...
    @property
    def aliases(self) -> tuple[str, ...]: ...
    @property
    def enabled_by_default(self) -> bool: ...


C = TypeVar("C", bound=KnownController)


class SelectionError(ValueError):
    """--controllers names a controller that is not installed."""


def canonical_names(known: Iterable[KnownController]) -> dict[str, str]:
    """Map every canonical name and alias to the canonical name."""
    names: dict[str, str] = {}
    for controller in known:
        names[controller.name] = controller.name
        for alias in controller.aliases:
            names[alias] = controller.name
    return names


def normalise(requested: Iterable[str], known: Iterable[KnownController]) -> list[str]:
    """Strip blanks, translate aliases (``-alias`` → ``-canonical``) and reject unknown names."""
    names = canonical_names(known)
    unknown: list[str] = []
    result: list[str] = []
    for raw in requested:
        item = raw.strip()
        if not item:
            continue
        if item == "*":
            result.append(item)
            continue
        negated = item.startswith("-")
        bare = item[1:] if negated else item
        if bare not in names:
            unknown.append(bare)
            continue
        result.append(("-" if negated else "") + names[bare])
    if unknown:
        messages = (f'"{name}" is not in the list of known controllers' for name in unknown)
        raise SelectionError("; ".join(messages))
    return result


def is_enabled(controller: KnownController, normalised: Sequence[str]) -> bool:
    """The decision for one controller, given an already normalised list."""
    star = False
    for item in normalised:
        if item == controller.name:
            return True
        if item == "-" + controller.name:
            return False
        if item == "*":
            star = True
    return star and controller.enabled_by_default


def select(requested: Iterable[str], known: Sequence[C]) -> list[C]:
    """The enabled controllers, in the order of `known`. Raises SelectionError for unknown names."""
    normalised = normalise(requested, known)
    return [controller for controller in known if is_enabled(controller, normalised)]
