"""The five deletion conditions the namespace controller keeps on a terminating namespace's status.

Each pass starts a fresh `ConditionUpdater`, reports what went wrong (discovery, content deletion) and what is
left (resources, finalizers), then `apply`s it: a condition not reported takes its "OK" form (status False),
so after the first pass all five exist. A condition is rewritten only when its status, reason or message
changed, and its lastTransitionTime moves only when its status flips (upstream:
pkg/controller/namespace/deletion/status_condition_utils.go).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from manager import format_time

DISCOVERY_FAILURE = "NamespaceDeletionDiscoveryFailure"
GROUP_VERSION_PARSING_FAILURE = "NamespaceDeletionGroupVersionParsingFailure"
CONTENT_FAILURE = "NamespaceDeletionContentFailure"
CONTENT_REMAINING = "NamespaceContentRemaining"
FINALIZERS_REMAINING = "NamespaceFinalizersRemaining"

CONDITION_TYPES = (
    DISCOVERY_FAILURE,
    GROUP_VERSION_PARSING_FAILURE,
    CONTENT_FAILURE,
    CONTENT_REMAINING,
    FINALIZERS_REMAINING,
)

# type -> (reason, message) of the condition when nothing is wrong.
OK_FORMS: Mapping[str, tuple[str, str]] = {
    DISCOVERY_FAILURE: ("ResourcesDiscovered", "All resources successfully discovered"),
    GROUP_VERSION_PARSING_FAILURE: ("ParsedGroupVersions", "All legacy kube types successfully parsed"),
    CONTENT_FAILURE: ("ContentDeleted", "All content successfully deleted, may be waiting on finalization"),
    CONTENT_REMAINING: ("ContentRemoved", "All content successfully removed"),
    FINALIZERS_REMAINING: ("ContentHasNoFinalizers", "All content-preserving finalizers finished"),
}

Condition = dict[str, Any]


@dataclass
class ConditionUpdater:
    """Collects one pass's failures and leftovers; `apply` turns them into the five conditions."""

    failing: dict[str, tuple[str, str]] = field(default_factory=dict)  # type -> (reason, message)
    content_errors: list[str] = field(default_factory=list)

    def discovery_failed(self, failed: Mapping[str, str] | None = None, error: str | None = None) -> None:
        """Some group versions could not be read (`failed`: "group/version" -> error), or discovery failed
        as a whole (`error`)."""
        if failed:
            groups = ", ".join(sorted(f"{gv}: {why}" for gv, why in failed.items()))
            message = (
                f"Discovery failed for some groups, {len(failed)} failing: "
                f"unable to retrieve the complete list of server APIs: {groups}"
            )
        else:
            message = error or "discovery failed"
        self.failing[DISCOVERY_FAILURE] = ("DiscoveryFailed", message)

    def group_version_failed(self, error: str) -> None:
        self.failing[GROUP_VERSION_PARSING_FAILURE] = ("GroupVersionParsingFailed", error)

    def delete_content_failed(self, error: str) -> None:
        self.content_errors.append(error)

    def content_totals(self, remaining: Mapping[str, int], finalizers: Mapping[str, int]) -> None:
        """`remaining`: "<resource>.<group>" -> objects left; `finalizers`: finalizer -> objects it holds."""
        resources = sorted(f"{res} has {n} resource instances" for res, n in remaining.items() if n)
        if resources:
            self.failing[CONTENT_REMAINING] = (
                "SomeResourcesRemain",
                f"Some resources are remaining: {', '.join(resources)}",
            )
        held = sorted(f"{fin} in {n} resource instances" for fin, n in finalizers.items() if n)
        if held:
            self.failing[FINALIZERS_REMAINING] = (
                "SomeFinalizersRemain",
                f"Some content in the namespace has finalizers remaining: {', '.join(held)}",
            )

    def wanted(self) -> dict[str, tuple[str, str, str]]:
        """type -> (status, reason, message) for all five."""
        failing = dict(self.failing)
        if self.content_errors and CONTENT_FAILURE not in failing:
            errors = sorted(self.content_errors)
            failing[CONTENT_FAILURE] = (
                "ContentDeletionFailed",
                f"Failed to delete all resource types, {len(errors)} remaining: {', '.join(errors)}",
            )
        result = {}
        for ctype in CONDITION_TYPES:
            if ctype in failing:
                result[ctype] = ("True", *failing[ctype])
            else:
                result[ctype] = ("False", *OK_FORMS[ctype])
        return result

    def apply(self, status: dict[str, Any], now: float) -> bool:
        """Bring `status["conditions"]` in line, in place (other condition types are kept); whether anything
        changed."""
        conditions: list[Condition] = [dict(c) for c in status.get("conditions") or ()]
        changed = False
        for ctype, (cstatus, reason, message) in self.wanted().items():
            index = next((i for i, c in enumerate(conditions) if c.get("type") == ctype), None)
            if index is None:
                conditions.append(
                    {
                        "type": ctype,
                        "status": cstatus,
                        "lastTransitionTime": format_time(now),
                        "reason": reason,
                        "message": message,
                    }
                )
                changed = True
                continue
            old = conditions[index]
            if (old.get("status"), old.get("reason"), old.get("message")) == (cstatus, reason, message):
                continue
            updated = {**old, "status": cstatus, "reason": reason, "message": message}
            if old.get("status") != cstatus:
                updated["lastTransitionTime"] = format_time(now)
            conditions[index] = updated
            changed = True
        if changed:
            status["conditions"] = conditions
        return changed
