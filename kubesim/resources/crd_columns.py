"""Cells of a CRD's additionalPrinterColumns, as the apiextensions-apiserver's table convertor
(pkg/registry/customresource/tableconvertor) fills them.

Each column's jsonPath is evaluated as the template `{<jsonPath>}` with missing keys allowed. A cell is null
when evaluation errs or finds nothing; otherwise only the first match counts (upstream documents columns
as simple paths: `.spec.items[*].name` shows the first name, not a joined list). A string column prints that
match (maps and lists as compact JSON, null as "<no value>"); the other types keep it only when it has the
right JSON type: integer (a number, truncated), number, boolean, and date, an RFC 3339 string shown as an age.
"""

from __future__ import annotations

import datetime
import re
import time
from collections.abc import Callable
from typing import Any

from kubesim.resources.jsonpath import JSONPathError, find_results, format_value, parse_template

JSON = dict[str, Any]
Cell = Callable[[JSON], Any]
# what Go's time.Parse(time.RFC3339, ...) takes: fractional seconds optional, Z or a numeric offset
_RFC3339 = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(\.\d+)?(Z|[+-]\d{2}:\d{2})$")


def column_cell(json_path: str, column_type: str, age: Callable[[float], str]) -> Cell:
    """The cell function of one column; `age` renders seconds since a date (kubectl's short duration)."""
    try:
        template = parse_template("{" + json_path + "}")
    except JSONPathError:
        return lambda obj: None  # validation rejects such paths; an old stored CRD just shows empty cells

    def cell(obj: JSON) -> Any:
        try:
            results = find_results(template, obj)
        except JSONPathError:
            return None
        if not results or not results[0]:
            return None
        value = results[0][0]
        if column_type == "string":
            return format_value(value)
        return typed_cell(column_type, value, age)

    return cell


def typed_cell(column_type: str, value: Any, age: Callable[[float], str]) -> Any:
    """cellForJSONValue: the value when it fits the column's type, else null."""
    if value is None:
        return None
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if column_type == "integer" and number:
        return int(value)
    if column_type == "number" and number:
        return float(value)
    if column_type == "boolean" and isinstance(value, bool):
        return value
    if column_type == "date" and isinstance(value, str):
        return date_cell(value, age)
    return None


def date_cell(value: str, age: Callable[[float], str]) -> str:
    """metav1.Time's query-parameter parsing, then ConvertToHumanReadableDateType."""
    if value in ("", "null"):
        return "<unknown>"  # the zero time
    match = _RFC3339.match(value)
    if match is None:
        return "<invalid>"
    fraction = (match.group(2) or "")[:7]  # Python keeps microseconds; finer digits cannot change an age
    zone = "+00:00" if match.group(3) == "Z" else match.group(3)
    try:
        stamp = datetime.datetime.fromisoformat(match.group(1) + fraction + zone)
    except ValueError:
        return "<invalid>"
    if stamp == datetime.datetime(1, 1, 1, tzinfo=datetime.UTC):
        return "<unknown>"
    return age(time.time() - stamp.timestamp())
