"""resource.Quantity as apimachinery parses it (`ParseQuantity`): what fails to decode (a 400 with its
error text, not Go's UnmarshalTypeError) and a quantity's value for the validation comparing them."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

FORMAT_WRONG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
SUFFIX_WRONG = "unable to parse quantity's suffix"
NUMERIC_WRONG = "unable to parse numeric part of quantity"
_SHAPE = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?([eEinumkKMGTP]*)([-+]?[0-9]*)")
_FACTORS: dict[str, Decimal] = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    **{prefix: Decimal(1000**power) for power, prefix in enumerate("kMGTPE", 1)},
    **{f"{prefix}i": Decimal(1024**power) for power, prefix in enumerate("KMGTPE", 1)},
}


def _parts(text: str) -> tuple[str, str, str] | str:
    """(number, suffix letters, exponent digits), or the parse error: the shape of parseQuantityString,
    which reads a sign, digits, a fraction, then suffix letters and an optional signed exponent."""
    if not text:
        return FORMAT_WRONG
    shape = _SHAPE.fullmatch(text)
    if shape is None:
        return FORMAT_WRONG
    sign, whole, fraction, letters, exponent = shape.groups()
    number = f"{sign}{whole or '0'}" + (f".{fraction}" if fraction else "")
    return number, letters, exponent


def _factor(letters: str, exponent: str) -> Decimal | None:
    if not exponent:
        return _FACTORS.get(letters)
    if letters in ("e", "E") and exponent.lstrip("+-").isdigit():
        return Decimal(10) ** int(exponent)  # 1e3; a bare "e" has no digits and is no suffix
    return None


def quantity_error(text: str) -> str | None:
    """ParseQuantity's error for `text`, or None when it is a quantity."""
    parts = _parts(text)
    if isinstance(parts, str):
        return parts
    _, letters, exponent = parts
    if _factor(letters, exponent) is None:
        return SUFFIX_WRONG
    return None


def quantity_value(value: object) -> Decimal | None:
    """The amount a JSON quantity (a string or a number) stands for; None when it does not parse."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return Decimal(str(value))
    if not isinstance(value, str):
        return None
    parts = _parts(value)
    if isinstance(parts, str):
        return None
    number, letters, exponent = parts
    factor = _factor(letters, exponent)
    if factor is None:
        return None
    try:
        return Decimal(number) * factor
    except InvalidOperation:
        return None
