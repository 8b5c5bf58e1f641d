"""Compiled label selectors of the objects a controller owns pods or ReplicaSets for, cached per UID."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from controllers.common.podutil import InvalidSelectorError, Obj, Selector, meta
from manager import Request


class SelectorCache:
    """`spec.selector` compiled once per object (immutable in apps/v1; recompiled if it ever changes)."""

    def __init__(self, log: Any, kind: str) -> None:
        self._log = log
        self._kind = kind  # the log field naming the object, e.g. "replicaset"
        self._compiled: dict[str, tuple[Any, Selector | None]] = {}

    def of(self, obj: Mapping[str, Any]) -> Selector | None:
        """The compiled selector; None when it is invalid (logged once per change)."""
        uid = str(meta(obj).get("uid") or "")
        raw = (obj.get("spec") or {}).get("selector")
        cached = self._compiled.get(uid)
        if cached is not None and cached[0] == raw:
            return cached[1]
        try:
            selector: Selector | None = Selector.from_label_selector(raw)
        except InvalidSelectorError as exc:
            self._log.error(
                "invalid selector", **{self._kind: Request.for_object(dict(obj)).key}, error=str(exc)
            )
            selector = None
        self._compiled[uid] = (raw, selector)
        return selector

    def selecting(self, candidates: Iterable[Obj], labels: Mapping[str, str]) -> list[Obj]:
        """The candidates whose valid, non-empty selector matches `labels` (an empty selector selects
        nothing for a controller: upstream's SelectingAll guard)."""
        found = []
        for candidate in candidates:
            selector = self.of(candidate)
            if selector is not None and not selector.empty and selector.matches(labels):
                found.append(candidate)
        return found

    def forget(self, uid: str) -> None:
        self._compiled.pop(uid, None)
