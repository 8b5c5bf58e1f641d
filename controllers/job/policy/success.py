"""spec.successPolicy of Indexed Jobs: the first rule satisfied by the succeeded indexes declares success."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controllers.job.indexed.intervals import Intervals


def _overlap(rule: Intervals, succeeded: Intervals) -> int:
    """How many indexes of `rule` are in `succeeded` (a linear merge of the two interval lists)."""
    count = 0
    r = s = 0
    while r < len(rule.spans) and s < len(succeeded.spans):
        (rf, rl), (sf, sl) = rule.spans[r], succeeded.spans[s]
        count += max(0, min(rl, sl) - max(rf, sf) + 1)
        if sl < rl:
            s += 1
        else:
            r += 1
    return count


def match_success_policy(
    policy: Mapping[str, Any] | None, completions: int, succeeded: Intervals
) -> str | None:
    """The SuccessCriteriaMet message ("Matched rules at index N") of the first satisfied rule, else None."""
    if not policy or not succeeded.spans:
        return None
    for position, rule in enumerate(policy.get("rules") or []):
        count = rule.get("succeededCount")
        if rule.get("succeededIndexes") is not None:
            required = Intervals.parse(rule["succeededIndexes"], completions)
            if not required.spans:
                continue  # unparsable: the rule can never match
            contained = _overlap(required, succeeded)
            if (count is None and contained == required.total()) or (
                count is not None and contained >= count
            ):
                return f"Matched rules at index {position}"
        elif count is not None and succeeded.total() >= count:
            return f"Matched rules at index {position}"
    return None
