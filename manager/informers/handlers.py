"""What informer handlers receive: the handler protocol, tombstones, and a functions-based handler."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

Obj = dict[str, Any]


@dataclass(frozen=True, slots=True)
class DeletedFinalStateUnknown:
    """A deletion the informer inferred on relist: the object vanished while the watch was down.

    `obj` is the last state the cache held; it may be stale. Handlers must accept this in `on_delete`.
    """

    key: str
    obj: Obj


class EventHandler(Protocol):
    """Receives an informer's notifications, in order per object, each handler on its own task.

    Methods may be plain functions or coroutines. They should be quick (map to keys, add to a work queue); an
    exception is logged and counted, and never stops the informer or the handler.
    """

    def on_add(self, obj: Obj, is_in_initial_list: bool) -> Awaitable[None] | None: ...

    def on_update(self, old: Obj, new: Obj) -> Awaitable[None] | None: ...

    def on_delete(self, obj: Obj | DeletedFinalStateUnknown) -> Awaitable[None] | None: ...


@dataclass
class EventHandlerFuncs:
    """A handler built from optional callables (client-go's EventHandlerFuncs)."""

    add: Callable[[Obj, bool], Awaitable[None] | None] | None = None
    update: Callable[[Obj, Obj], Awaitable[None] | None] | None = None
    delete: Callable[[Obj | DeletedFinalStateUnknown], Awaitable[None] | None] | None = None

    def on_add(self, obj: Obj, is_in_initial_list: bool) -> Awaitable[None] | None:
        return self.add(obj, is_in_initial_list) if self.add else None

    def on_update(self, old: Obj, new: Obj) -> Awaitable[None] | None:
        return self.update(old, new) if self.update else None

    def on_delete(self, obj: Obj | DeletedFinalStateUnknown) -> Awaitable[None] | None:
        return self.delete(obj) if self.delete else None


def final_object(obj: Obj | DeletedFinalStateUnknown) -> Obj:
    """The object inside a tombstone, or the object itself."""
    return obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
