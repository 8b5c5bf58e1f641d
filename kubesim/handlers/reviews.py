"""Access and identity reviews (`kubectl auth can-i`, `kubectl auth whoami`, token reviews): answered at once
and never stored. kubesim stores RBAC objects but does not enforce them, so everything is allowed."""

from __future__ import annotations

from typing import Any

JSON = dict[str, Any]
USER = {"username": "kubesim-admin", "groups": ["system:masters", "system:authenticated"]}
_ALL_RULES = {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}


def answer(kind: str, obj: JSON) -> JSON:
    """The review with its status filled in."""
    if kind == "SelfSubjectReview":
        obj["status"] = {"userInfo": dict(USER)}
    elif kind == "TokenReview":
        obj["status"] = {
            "authenticated": True,
            "user": dict(USER),
            "audiences": (obj.get("spec") or {}).get("audiences") or [],
        }
    elif kind == "SelfSubjectRulesReview":
        obj["status"] = {
            "resourceRules": [dict(_ALL_RULES)],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            "incomplete": False,
        }
    else:
        obj["status"] = {"allowed": True, "reason": "kubesim does not enforce RBAC"}
    obj.setdefault("metadata", {})
    return obj
