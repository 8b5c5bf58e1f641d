"""Typed reads of custom resources: a lister that validates each cached object against its model once per
resourceVersion, and what a controller does with an object that passes the CRD schema but not the model (an
`Invalid` condition, reason `InvalidSpec`, and a Warning event; then a TerminalError: no retry storm)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import ValidationError

from manager.apimachinery.conditions import (
    is_status_condition_true,
    remove_status_condition,
    set_status_condition,
)
from manager.apimachinery.customresource import CustomResource
from manager.controller.reconcile import TerminalError

if TYPE_CHECKING:
    from manager.client.rest import ApiClient
    from manager.events import EventRecorder
    from manager.informers import Lister

M = TypeVar("M", bound=CustomResource)

INVALID_CONDITION = "Invalid"
INVALID_REASON = "InvalidSpec"


def describe_validation_error(error: ValidationError) -> str:
    """`spec.replicas: Input should be less than 5` (and how many more problems)."""
    problems = error.errors()
    first = problems[0]
    where = ".".join(str(part) for part in first.get("loc", ())) or "object"
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"{where}: {first['msg']}{more}"


class InvalidObject(TerminalError):
    """A cached object that the model rejects; `message` names the first field at fault, `object` is the
    raw object (to release a finalizer of an invalid object being deleted). A TerminalError: a reconcile
    that lets it through is not retried (the object's next change reconciles it again)."""

    def __init__(self, obj: Mapping[str, Any], error: ValidationError) -> None:
        self.object = obj
        self.error = error
        self.message = describe_validation_error(error)
        super().__init__(self.message)


class TypedLister(Generic[M]):
    """A lister's objects as validated `model` instances. Each object version is validated once: the parsed
    model (or its validation error) is cached by key and resourceVersion, so reads of an unchanged object
    cost a dict lookup. Returned models are shared: treat them as read-only."""

    def __init__(self, model: type[M], lister: Lister[Any]) -> None:
        self.model = model
        self.lister = lister
        self.validations = 0  # how many times an object was validated (for tests and debugging)
        self._cache: dict[str, tuple[str, M | InvalidObject]] = {}

    def _parse(self, key: str, obj: Mapping[str, Any]) -> M | InvalidObject:
        rv = (obj.get("metadata") or {}).get("resourceVersion") or ""
        hit = self._cache.get(key)
        if hit is not None and rv and hit[0] == rv:
            return hit[1]
        self.validations += 1
        try:
            parsed: M | InvalidObject = self.model.from_object(dict(obj))
        except ValidationError as exc:
            parsed = InvalidObject(obj, exc)
        self._cache[key] = (rv, parsed)
        return parsed

    def get_by_key(self, key: str) -> M | None:
        """The object under `key` as a model, None when not cached; raises `InvalidObject`."""
        obj = self.lister.get_by_key(key)
        if obj is None:
            self._cache.pop(key, None)
            return None
        parsed = self._parse(key, obj)
        if isinstance(parsed, InvalidObject):
            raise parsed
        return parsed

    def get(self, namespace: str | None, name: str) -> M | None:
        return self.get_by_key(f"{namespace}/{name}" if namespace else name)

    def list(self) -> list[M]:
        """Every valid cached object (invalid ones are skipped: their reconcile reports them)."""
        found = []
        keys = self.lister.list_keys()
        for stale in self._cache.keys() - set(keys):  # deleted objects leave the cache here or on a get
            del self._cache[stale]
        for key in keys:
            obj = self.lister.get_by_key(key)
            if obj is not None and not isinstance(parsed := self._parse(key, obj), InvalidObject):
                found.append(parsed)
        return found


async def report_invalid(
    client: ApiClient, recorder: EventRecorder, model: type[CustomResource], invalid: InvalidObject
) -> bool:
    """Set the `Invalid`/`InvalidSpec` condition naming the field, and record a Warning event, unless the
    object already says so; returns whether it wrote anything."""
    from manager.client.errors import Conflict
    from manager.client.toolkit import patch_status

    obj = invalid.object
    status = obj.get("status") if isinstance(obj.get("status"), dict) else {}
    conditions = [dict(c) for c in (status or {}).get("conditions") or () if isinstance(c, dict)]
    condition = {
        "type": INVALID_CONDITION,
        "status": "True",
        "reason": INVALID_REASON,
        "message": invalid.message,
    }
    generation = (obj.get("metadata") or {}).get("generation")
    if generation is not None:
        condition["observedGeneration"] = generation
    if not set_status_condition(conditions, condition, time.time()):
        return False
    try:
        await patch_status(client, model.gvr(), obj, {"conditions": conditions}, resource_version=_rv(obj))
    except Conflict:  # a newer version exists: its own reconcile reports on it
        return False
    recorder.event(dict(obj), "Warning", INVALID_REASON, invalid.message)
    return True


async def clear_invalid(client: ApiClient, model: type[CustomResource], obj: Mapping[str, Any]) -> bool:
    """Remove a stale `Invalid` condition from an object that is valid again; returns whether it wrote."""
    from manager.client.errors import Conflict
    from manager.client.toolkit import patch_status

    conditions = [dict(c) for c in ((obj.get("status") or {}).get("conditions") or ())]
    if not is_status_condition_true(conditions, INVALID_CONDITION):
        return False
    remove_status_condition(conditions, INVALID_CONDITION)
    try:
        await patch_status(client, model.gvr(), obj, {"conditions": conditions}, resource_version=_rv(obj))
    except Conflict:  # a newer version exists and will be reconciled
        return False
    return True


def _rv(obj: Mapping[str, Any]) -> str | None:
    return (obj.get("metadata") or {}).get("resourceVersion") or None
