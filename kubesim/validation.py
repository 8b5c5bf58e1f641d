"""Validation with the real messages (stub: filled in next commit)."""

from __future__ import annotations

from typing import Any

JSON = dict[str, Any]
GVK = tuple[str, str, str]


def validate(resource: str, obj: JSON, old: JSON | None) -> list[JSON]:
    """Causes (reason, message, field) for create (old None) or update; empty when valid."""
    return []


def validate_status(resource: str, new: JSON, old: JSON) -> list[JSON]:
    """Causes for a write to the status subresource."""
    return []


def unknown_fields(gvk: GVK, obj: JSON) -> list[str]:
    """Paths such as `.spec.foo` of fields the schema does not know (fieldValidation=Strict)."""
    return []


def invalid_message(kind: str, name: str, causes: list[JSON]) -> str:
    """`<kind> "<name>" is invalid: <field>: <message>` (several causes: `[a, b]`)."""
    parts = [f"{c['field']}: {c['message']}" if c.get("field") else str(c["message"]) for c in causes]
    summary = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    return f'{kind} "{name}" is invalid: {summary}'
