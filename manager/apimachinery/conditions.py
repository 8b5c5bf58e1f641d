"""Status conditions with the rules of apimachinery's `meta.SetStatusCondition` and friends, on plain dicts.

A condition is a `metav1.Condition` as JSON: `type`, `status` ("True"/"False"/"Unknown"), `reason`, `message`,
`observedGeneration` and `lastTransitionTime`. `lastTransitionTime` moves only when `status` changes.
"""

from __future__ import annotations

from collections.abc import MutableSequence, Sequence
from typing import Any

from manager.apimachinery.metatime import format_time

Condition = dict[str, Any]

_UPDATED_FIELDS = ("reason", "message", "observedGeneration")


def find_status_condition(conditions: Sequence[Condition] | None, type: str) -> Condition | None:
    """The condition of `type`, or None (the dict itself: changing it changes the list)."""
    for condition in conditions or ():
        if condition.get("type") == type:
            return condition
    return None


def set_status_condition(conditions: MutableSequence[Condition], new: Condition, now: float) -> bool:
    """Add `new` to `conditions` or update the condition of its type; return whether it changed.

    As `meta.SetStatusCondition`: a new condition keeps its own `lastTransitionTime` or gets `now` (epoch
    seconds); an existing one gets a new `lastTransitionTime` only when its `status` changes (the one given
    in `new`, else `now`), and takes `reason`, `message` and `observedGeneration` from `new` when they differ.
    """
    index = next((i for i, c in enumerate(conditions) if c.get("type") == new["type"]), None)
    if index is None:
        added = dict(new)
        if not added.get("lastTransitionTime"):
            added["lastTransitionTime"] = format_time(now)
        conditions.append(added)
        return True
    # The entry is replaced by an updated copy, never edited: a shallow copy of a list whose dicts are shared
    # (a cached object's, a typed model's) stays untouched.
    updated = dict(conditions[index])
    changed = False
    if updated.get("status") != new.get("status"):
        updated["status"] = new.get("status")
        updated["lastTransitionTime"] = new.get("lastTransitionTime") or format_time(now)
        changed = True
    for field in _UPDATED_FIELDS:
        if updated.get(field) != new.get(field):
            if new.get(field) is None:
                updated.pop(field, None)
            else:
                updated[field] = new[field]
            changed = True
    if changed:
        conditions[index] = updated
    return changed


def remove_status_condition(conditions: MutableSequence[Condition], type: str) -> bool:
    """Remove every condition of `type`; return whether one was there."""
    kept = [c for c in conditions if c.get("type") != type]
    if len(kept) == len(conditions):
        return False
    conditions[:] = kept
    return True


def is_status_condition_present_and_equal(
    conditions: Sequence[Condition] | None, type: str, status: str
) -> bool:
    """Whether the condition of `type` exists with exactly `status`."""
    condition = find_status_condition(conditions, type)
    return condition is not None and condition.get("status") == status


def is_status_condition_true(conditions: Sequence[Condition] | None, type: str) -> bool:
    return is_status_condition_present_and_equal(conditions, type, "True")


def is_status_condition_false(conditions: Sequence[Condition] | None, type: str) -> bool:
    return is_status_condition_present_and_equal(conditions, type, "False")
