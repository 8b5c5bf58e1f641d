"""Discovery of controllers through the entry-point group ``aiokcm.controllers``.

Built-in controllers register exactly as a third party does, e.g. in pyproject.toml::

    [project.entry-points."aiokcm.controllers"]
    job-controller = "controllers.job:JobController"

Each entry point loads a class with class attributes ``name`` (canonical name), ``aliases`` (tuple of str) and
``enabled_by_default`` (bool). The manager later instantiates it as ``cls(ctx)``.
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib.metadata import EntryPoint, entry_points

from manager.lifecycle.descriptor import ControllerInfo

GROUP = "aiokcm.controllers"


class RegistryError(RuntimeError):
    """An entry point cannot be loaded or does not describe a controller; the message names it."""


def _describe(ep: EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    origin = f" (from {dist.name})" if dist is not None else ""
    return f'entry point "{ep.name} = {ep.value}"{origin}'


def load_entry_point(ep: EntryPoint) -> ControllerInfo:
    """Load one entry point and check it follows the controller contract."""
    where = _describe(ep)
    try:
        cls = ep.load()
    except Exception as exc:
        raise RegistryError(f"controller {where} failed to load: {type(exc).__name__}: {exc}") from None
    name = getattr(cls, "name", None)
    aliases = getattr(cls, "aliases", ())
    enabled = getattr(cls, "enabled_by_default", None)
    if not callable(cls):
        raise RegistryError(f"controller {where} is not a class")
    if not isinstance(name, str) or not name or name.startswith("-") or name == "*":
        raise RegistryError(f"controller {where} has no valid class attribute `name`")
    if isinstance(aliases, str) or not all(isinstance(a, str) and a for a in aliases):
        raise RegistryError(f"controller {where}: `aliases` must be a tuple of names")
    if not isinstance(enabled, bool):
        raise RegistryError(f"controller {where}: `enabled_by_default` must be True or False")
    dist = getattr(ep, "dist", None)
    return ControllerInfo(
        name=name,
        aliases=tuple(aliases),
        enabled_by_default=enabled,
        cls=cls,
        entry_point=f"{ep.name} = {ep.value}",
        distribution=dist.name if dist is not None else None,
    )


def broken_plugin(ep: EntryPoint, error: RegistryError) -> ControllerInfo:
    """A controller whose entry point cannot be loaded or is invalid, under the entry point's name (the
    controller's name by convention): on by default, since nothing else can be known, and
    `--controllers=-name` turns it off. Building it raises the load error, so the manager reports it as a
    controller that cannot be initialised (its readiness check, /debug/controllers, the logs, restarts
    counted) and runs the others."""
    message = str(error)

    class BrokenPlugin:
        def __init__(self, ctx: object) -> None:
            raise RegistryError(message)

    BrokenPlugin.__qualname__ = f"BrokenPlugin[{ep.name}]"
    dist = getattr(ep, "dist", None)
    return ControllerInfo(
        name=ep.name,
        aliases=(),
        enabled_by_default=True,
        cls=BrokenPlugin,
        entry_point=f"{ep.name} = {ep.value}",
        distribution=dist.name if dist is not None else None,
        load_error=message,
    )


def check_unique(controllers: Iterable[ControllerInfo]) -> None:
    """Two controllers may not share a name or alias; the message names both entry points."""
    owner: dict[str, ControllerInfo] = {}
    for controller in controllers:
        for label in (controller.name, *controller.aliases):
            previous = owner.get(label)
            if previous is not None and previous is not controller:
                raise RegistryError(
                    f'controller name "{label}" is claimed by both "{previous.entry_point}" '
                    f'and "{controller.entry_point}"'
                )
            owner[label] = controller


def discover(group: str = GROUP) -> list[ControllerInfo]:
    """All installed controllers, sorted by name; an entry point that cannot be loaded is listed as a broken
    plugin (`load_error` set). Raises RegistryError when two controllers claim one name."""
    seen: set[tuple[str, str]] = set()
    found: list[ControllerInfo] = []
    for ep in entry_points(group=group):
        # A distribution can be visible twice (site-packages and an .egg-info in the working directory).
        if (ep.name, ep.value) in seen:
            continue
        seen.add((ep.name, ep.value))
        try:
            found.append(load_entry_point(ep))
        except RegistryError as exc:
            found.append(broken_plugin(ep, exc))
    check_unique(found)
    return sorted(found, key=lambda info: info.name)
