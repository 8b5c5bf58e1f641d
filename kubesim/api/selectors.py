"""Label and field selectors: parsing (400 on malformed input) and matching, with apimachinery's grammar."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubesim.status import errors

JSON = dict[str, Any]

_LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_SPECIAL = "=!(),<> \t\n"


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!", "gt", "lt"
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.op in ("=", "in"):
            return present and value in self.values
        if self.op in ("!=", "notin"):
            return not present or value not in self.values
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if not present:
            return False
        try:
            number = int(value or "")
        except ValueError:
            return False
        bound = int(self.values[0])
        return number > bound if self.op == "gt" else number < bound


LabelSelector = tuple[Requirement, ...]


def _label_error(detail: str) -> errors.ApiError:
    return errors.bad_request(f"unable to parse requirement: {detail}")


def _check_key(key: str) -> None:
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        raise _label_error(f'<nil>: Invalid value: "{key}": prefix part must be a valid DNS subdomain')
    if not name or len(name) > 63 or not _LABEL_NAME.match(name):
        raise _label_error(
            f"<nil>: Invalid value: \"{key}\": name part must consist of alphanumeric characters, '-', '_' "
            "or '.', and must start and end with an alphanumeric character"
        )


def _check_value(key: str, value: str) -> None:
    if value and (len(value) > 63 or not _LABEL_NAME.match(value)):
        raise _label_error(
            f'values[0][{key}]: Invalid value: "{value}": a valid label must be an empty string or '
            "consist of "
            "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        )


def _tokenize(text: str) -> list[str]:
    tokens: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch in " \t\n":
            i += 1
        elif text.startswith(("==", "!="), i):
            tokens.append(text[i : i + 2])
            i += 2
        elif ch in "=!(),<>":
            tokens.append(ch)
            i += 1
        else:
            j = i
            while j < len(text) and text[j] not in _SPECIAL:
                j += 1
            tokens.append(text[i:j])
            i = j
    return tokens


def _is_word(token: str | None) -> bool:
    return token is not None and token not in ("==", "!=", "=", "!", "(", ")", ",", "<", ">")


def parse_label_selector(text: str) -> LabelSelector:
    """Parse `a=b,c!=d,e in (f,g),!h,i`; raise ApiError 400 on malformed input."""
    tokens = _tokenize(text)
    reqs: list[Requirement] = []
    pos = 0

    def peek() -> str | None:
        return tokens[pos] if pos < len(tokens) else None

    while pos < len(tokens):
        token = tokens[pos]
        if token == "!":
            pos += 1
            key = peek()
            if not _is_word(key):
                raise _label_error(f"found '{key or ''}', expected: identifier")
            assert key is not None
            _check_key(key)
            reqs.append(Requirement(key, "!"))
            pos += 1
        elif _is_word(token):
            key = token
            _check_key(key)
            pos += 1
            op = peek()
            if op is None or op == ",":
                reqs.append(Requirement(key, "exists"))
            elif op in ("=", "==", "!=", "<", ">"):
                pos += 1
                value = peek()
                if value is None or value == ",":
                    value = ""
                elif not _is_word(value):
                    raise _label_error(f"found '{value}', expected: identifier")
                else:
                    pos += 1
                if op in ("<", ">"):
                    if not value.isdigit():
                        raise _label_error(f"for 'Gt', 'Lt' operators, the value must be an integer: {value}")
                    reqs.append(Requirement(key, "gt" if op == ">" else "lt", (value,)))
                else:
                    _check_value(key, value)
                    reqs.append(Requirement(key, "!=" if op == "!=" else "=", (value,)))
            elif op in ("in", "notin"):
                pos += 1
                if peek() != "(":
                    raise _label_error(f"found '{peek() or ''}', expected: '('")
                pos += 1
                values: list[str] = []
                while True:
                    value = peek()
                    if value == ")" and not values:
                        break
                    if value is None:
                        raise _label_error("found '', expected: ',', ')' or identifier")
                    if _is_word(value):
                        _check_value(key, value)
                        values.append(value)
                        pos += 1
                    elif value in (",", ")"):
                        values.append("")
                    else:
                        raise _label_error(f"found '{value}', expected: ',', ')' or identifier")
                    sep = peek()
                    if sep == ")":
                        break
                    if sep != ",":
                        raise _label_error(f"found '{sep or ''}', expected: ',' or ')'")
                    pos += 1
                pos += 1
                if not values:
                    raise _label_error("for 'in', 'notin' operators, values set can't be empty")
                reqs.append(Requirement(key, op, tuple(values)))
            else:
                raise _label_error(f"found '{op}', expected: in, notin, =, ==, !=, gt, lt")
        else:
            raise _label_error(f"found '{token}', expected: !, identifier, or 'end of string'")
        if pos < len(tokens):
            if tokens[pos] != ",":
                raise _label_error(f"found '{tokens[pos]}', expected: ',' or 'end of string'")
            pos += 1
            if pos == len(tokens):
                raise _label_error("found '', expected: !, identifier, or 'end of string'")
    return tuple(reqs)


def labels_match(selector: LabelSelector, obj: JSON) -> bool:
    labels = obj.get("metadata", {}).get("labels") or {}
    return all(req.matches(labels) for req in selector)


def label_selector_from_object(selector: JSON | None) -> str:
    """A metav1.LabelSelector as the string form (Scale.status.selector)."""
    if not selector:
        return ""
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        op, key, values = expr.get("operator"), expr.get("key"), expr.get("values") or []
        if op == "In":
            parts.append(f"{key} in ({','.join(sorted(values))})")
        elif op == "NotIn":
            parts.append(f"{key} notin ({','.join(sorted(values))})")
        elif op == "Exists":
            parts.append(str(key))
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
    return ",".join(parts)


# ---- field selectors --------------------------------------------------------------------------------------

FieldSelector = tuple[tuple[str, str, str], ...]  # (dotted path in the stored object, op "=" | "!=", value)


def _split_unescaped(text: str, sep: str) -> list[str]:
    parts, current, i = [], [], 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            current.append(text[i : i + 2])
            i += 2
            continue
        if text[i] == sep:
            parts.append("".join(current))
            current = []
        else:
            current.append(text[i])
        i += 1
    parts.append("".join(current))
    return parts


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", r"\1", value)


def parse_field_selector(text: str, allowed: Mapping[str, str], custom: bool = False) -> FieldSelector:
    """Parse `a=b,c!=d` against the type's supported fields (`allowed`: field -> stored path)."""
    terms: list[tuple[str, str, str]] = []
    if not text.strip():
        return ()
    for term in _split_unescaped(text, ","):
        match = re.match(r"^(.*?)(==|!=|=)(.*)$", term)
        if match is None or not match.group(1) or any(c in match.group(1) for c in "()"):
            raise errors.bad_request(f"invalid selector: '{text}'; can't understand '{term}'")
        field, op, value = match.group(1).strip(), match.group(2), _unescape(match.group(3))
        if field not in allowed:
            if custom:
                known = ", ".join(f'"{f}"' for f in sorted(allowed))
                raise errors.bad_request(f'"{field}" is not a known field selector: only {known}')
            raise errors.bad_request(f"field label not supported: {field}")
        terms.append((allowed[field], "!=" if op == "!=" else "=", value))
    return tuple(terms)


def field_value(obj: JSON, path: str) -> str:
    current: Any = obj
    for part in path.split("."):
        if not isinstance(current, dict):
            current = None
            break
        current = current.get(part)
    if current is None:
        return ""
    if isinstance(current, bool):
        return "true" if current else "false"
    return str(current)


def fields_match(selector: FieldSelector, obj: JSON) -> bool:
    for path, op, value in selector:
        equal = field_value(obj, path) == value
        if equal != (op == "="):
            return False
    return True


def make_filter(label: LabelSelector, field: FieldSelector) -> Callable[[JSON], bool] | None:
    """One predicate for both selectors, or None when nothing filters."""
    if not label and not field:
        return None
    return lambda obj: labels_match(label, obj) and fields_match(field, obj)
