"""Building blocks of kubesim.validation: field errors with apimachinery's texts, name/label/selector checks
and object metadata.

A cause is `{"reason": "FieldValueInvalid", "message": "Invalid value: \"x\": detail", "field": "spec.x"}`:
the message is what apimachinery's `field.Error.ErrorBody()` prints and the reason its StatusCause type.
`go_repr` renders bad values the way Go's `%v`/`%q`/`%#v` do for the shapes that appear in messages.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

JSON = dict[str, Any]
Causes = list[JSON]

OMIT = object()  # field.OmitValue: the message shows no value

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
DNS1123_LABEL_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
DNS1123_SUBDOMAIN_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
DNS1035_LABEL_RE = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
QUALIFIED_NAME_RE = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
LABEL_VALUE_RE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")

DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
    "regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
DNS1035_LABEL_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
QUALIFIED_NAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
TOTAL_ANNOTATION_SIZE = 256 * 1024


class LabelSelector(dict[str, Any]):
    """Marks a dict as a metav1.LabelSelector so that messages print it as Go's %#v does."""


def as_selector(value: Any) -> Any:
    return LabelSelector(value) if isinstance(value, dict) else value


def go_repr(value: Any) -> str:
    """A bad value as apimachinery prints it: %q strings, %v numbers, %#v maps and label selectors."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, LabelSelector):
        labels = _go_string_map(value.get("matchLabels"))
        expressions = value.get("matchExpressions")
        rendered = (
            "[]v1.LabelSelectorRequirement(nil)"
            if not expressions
            else "[]v1.LabelSelectorRequirement{"
            + ", ".join(
                f"v1.LabelSelectorRequirement{{Key:{go_repr(e.get('key', ''))}, "
                f"Operator:{go_repr(e.get('operator', ''))}, Values:{_go_string_slice(e.get('values'))}}}"
                for e in expressions
            )
            + "}"
        )
        return f"v1.LabelSelector{{MatchLabels:{labels}, MatchExpressions:{rendered}}}"
    if isinstance(value, dict) and all(isinstance(v, str) for v in value.values()):
        return _go_string_map(value)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return _go_string_slice(value)
    return repr(value)


def _go_string_map(value: Any) -> str:
    if not value:
        return "map[string]string(nil)"
    return (
        "map[string]string{" + ", ".join(f"{go_repr(k)}:{go_repr(v)}" for k, v in sorted(value.items())) + "}"
    )


def _go_string_slice(value: Any) -> str:
    if value is None:
        return "[]string(nil)"
    return "[]string{" + ", ".join(go_repr(v) for v in value) + "}"


def _with_detail(head: str, detail: str) -> str:
    return f"{head}: {detail}" if detail else head


def invalid(field: str, value: Any, detail: str) -> JSON:
    head = "Invalid value" if value is OMIT else f"Invalid value: {go_repr(value)}"
    return {"reason": "FieldValueInvalid", "message": _with_detail(head, detail), "field": field}


def required(field: str, detail: str = "") -> JSON:
    return {"reason": "FieldValueRequired", "message": _with_detail("Required value", detail), "field": field}


def not_supported(field: str, value: Any, supported: list[str] | tuple[str, ...]) -> JSON:
    values = ", ".join(go_repr(v) for v in supported)
    return {
        "reason": "FieldValueNotSupported",
        "message": f"Unsupported value: {go_repr(value)}: supported values: {values}",
        "field": field,
    }


def forbidden(field: str, detail: str) -> JSON:
    return {"reason": "FieldValueForbidden", "message": _with_detail("Forbidden", detail), "field": field}


def duplicate(field: str, value: Any) -> JSON:
    return {"reason": "FieldValueDuplicate", "message": f"Duplicate value: {go_repr(value)}", "field": field}


def too_long(field: str, max_length: int) -> JSON:
    unit = "byte" if max_length == 1 else "bytes"
    return {
        "reason": "FieldValueTooLong",
        "message": f"Too long: may not be more than {max_length} {unit}",
        "field": field,
    }


def immutable(field: str, value: Any) -> JSON:
    return invalid(field, value, "field is immutable")


def non_negative(field: str, value: Any) -> Causes:
    if isinstance(value, int) and not isinstance(value, bool) and value < 0:
        return [invalid(field, value, "must be greater than or equal to 0")]
    return []


def positive(field: str, value: Any) -> Causes:
    if isinstance(value, int) and not isinstance(value, bool) and value <= 0:
        return [invalid(field, value, "must be greater than 0")]
    return []


def _name_errors(value: str, max_length: int, pattern: re.Pattern[str], message: str) -> list[str]:
    errors = []
    if len(value) > max_length:
        errors.append(f"must be no more than {max_length} characters")
    if not pattern.fullmatch(value):
        errors.append(message)
    return errors


def dns1123_label(value: str) -> list[str]:
    return _name_errors(value, DNS1123_LABEL_MAX, DNS1123_LABEL_RE, DNS1123_LABEL_MSG)


def dns1123_subdomain(value: str) -> list[str]:
    return _name_errors(value, DNS1123_SUBDOMAIN_MAX, DNS1123_SUBDOMAIN_RE, DNS1123_SUBDOMAIN_MSG)


def dns1035_label(value: str) -> list[str]:
    return _name_errors(value, DNS1123_LABEL_MAX, DNS1035_LABEL_RE, DNS1035_LABEL_MSG)


def path_segment_name(value: str) -> list[str]:
    """RBAC-style names: anything but `.`, `..`, `/` and `%`."""
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in value]


NAME_RULES = {
    "subdomain": dns1123_subdomain,
    "label": dns1123_label,
    "dns1035": dns1035_label,
    "segment": path_segment_name,
}


def qualified_name(value: str) -> list[str]:
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            return ["prefix part must be non-empty", *_name_part(name)]
        return ["prefix part " + m for m in dns1123_subdomain(prefix)] + _name_part(name)
    else:
        return [
            "a qualified name " + QUALIFIED_NAME_MSG + " with an optional DNS subdomain prefix and '/' "
            "(e.g. 'example.com/MyName')"
        ]
    return _name_part(name)


def _name_part(name: str) -> list[str]:
    if not name:
        return ["name part must be non-empty"]
    errors = []
    if len(name) > DNS1123_LABEL_MAX:
        errors.append(f"name part must be no more than {DNS1123_LABEL_MAX} characters")
    if not QUALIFIED_NAME_RE.fullmatch(name):
        errors.append("name part " + QUALIFIED_NAME_MSG)
    return errors


def label_value(value: str) -> list[str]:
    return _name_errors(value, DNS1123_LABEL_MAX, LABEL_VALUE_RE, LABEL_VALUE_MSG)


_KNOWN_VALID: set[tuple[Callable[[str], list[str]], str]] = set()


def problems(check: Callable[[str], list[str]], value: str) -> list[str]:
    """`check(value)`, remembering the values that passed: the same label keys, label values, finalizers
    and namespaces come back on almost every write."""
    key = (check, value)
    if key in _KNOWN_VALID:
        return []
    found = check(value)
    if not found:
        if len(_KNOWN_VALID) >= 16384:
            _KNOWN_VALID.clear()
        _KNOWN_VALID.add(key)
    return found


def validate_labels(labels: Any, field: str) -> Causes:
    causes: Causes = []
    if not isinstance(labels, dict):
        return causes
    for key, value in labels.items():
        causes.extend(invalid(field, key, m) for m in problems(qualified_name, str(key)))
        text = str(value if value is not None else "")
        causes.extend(invalid(field, value, m) for m in problems(label_value, text))
    return causes


def validate_label_selector(selector: Any, field: str) -> Causes:
    if not isinstance(selector, dict):
        return []
    causes = validate_labels(selector.get("matchLabels"), f"{field}.matchLabels")
    for i, requirement in enumerate(selector.get("matchExpressions") or []):
        path = f"{field}.matchExpressions[{i}]"
        operator = requirement.get("operator")
        values = requirement.get("values") or []
        if operator in ("In", "NotIn") and not values:
            causes.append(required(f"{path}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
        elif operator in ("Exists", "DoesNotExist") and values:
            causes.append(
                forbidden(
                    f"{path}.values", "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
                )
            )
        elif operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
            causes.append(invalid(f"{path}.operator", operator, "not a valid selector operator"))
        causes.extend(
            invalid(f"{path}.key", requirement.get("key"), m)
            for m in qualified_name(str(requirement.get("key", "")))
        )
    return causes


def selector_matches(selector: Any, labels: Any) -> bool:
    """LabelSelector semantics (an empty selector matches everything)."""
    labels = labels if isinstance(labels, dict) else {}
    if not isinstance(selector, dict):
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for requirement in selector.get("matchExpressions") or []:
        key, operator = requirement.get("key"), requirement.get("operator")
        values = requirement.get("values") or []
        if operator == "In" and labels.get(key) not in values:
            return False
        if operator == "NotIn" and key in labels and labels[key] in values:
            return False
        if operator == "Exists" and key not in labels:
            return False
        if operator == "DoesNotExist" and key in labels:
            return False
    return True


def selector_is_empty(selector: Any) -> bool:
    return (
        isinstance(selector, dict)
        and not selector.get("matchLabels")
        and not selector.get("matchExpressions")
    )
