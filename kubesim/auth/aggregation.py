"""ClusterRole aggregation (upstream `pkg/controller/clusterroleaggregation`): a ClusterRole with an
aggregationRule gets the rules of every other ClusterRole its clusterRoleSelectors match. Upstream a
controller fills them in shortly after; here every write of a ClusterRole recomputes them at once."""

from __future__ import annotations

from typing import Any

from kubesim.api.selectors import label_selector_from_object, labels_match, parse_label_selector
from kubesim.auth.rbac import CLUSTER_ROLES
from kubesim.status import errors
from kubesim.storage.store import Store, Subscription, WatchEvent

JSON = dict[str, Any]


def _selects(selector: Any, role: JSON) -> bool:
    if not isinstance(selector, dict):
        return False
    try:
        return labels_match(parse_label_selector(label_selector_from_object(selector)), role)
    except errors.ApiError:
        return False  # an unparsable selector selects nothing


def aggregated_rules(role: JSON, roles: list[JSON]) -> list[JSON] | None:
    """The rules `role` aggregates from `roles` (sorted by name, duplicates once), or None when it has no
    aggregationRule."""
    rule = role.get("aggregationRule")
    if not isinstance(rule, dict):
        return None
    selectors = rule.get("clusterRoleSelectors") or []
    name = role.get("metadata", {}).get("name")
    rules: list[JSON] = []
    for other in sorted(roles, key=lambda r: str(r.get("metadata", {}).get("name", ""))):
        if other.get("metadata", {}).get("name") == name:
            continue
        if not any(_selects(selector, other) for selector in selectors):
            continue
        for candidate in other.get("rules") or []:
            if candidate not in rules:
                rules.append(candidate)
    return rules


def aggregate_all(store: Store) -> None:
    """Bring every aggregated ClusterRole's rules up to date (a write only when they changed)."""
    roles = [entry.obj for entry in store.entries(CLUSTER_ROLES)]
    for role in roles:
        rules = aggregated_rules(role, roles)
        if rules is None or rules == (role.get("rules") or []):
            continue
        updated = store.get(CLUSTER_ROLES, "", str(role["metadata"]["name"]))
        if updated is not None:
            updated["rules"] = rules
            updated["metadata"].pop("resourceVersion", None)
            store.update(CLUSTER_ROLES, updated, check_resource_version=False)


def follow(store: Store) -> Subscription:
    """Re-aggregate after each ClusterRole write; the subscription's close() stops it."""

    def changed(event: WatchEvent) -> None:
        aggregate_all(store)

    return store.subscribe(CLUSTER_ROLES, changed)
