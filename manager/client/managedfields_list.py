"""Decode a LIST body without decoding its items' `metadata.managedFields` — for informers that drop them.

The list counterpart of `managedfields` (read its docstring first): every `"managedFields":[...]` array in
the body is cut out of the bytes and replaced by the same marker, then the body is decoded once. Besides the
decoding time this saves memory that stays: decoded whole, a 100,000-pod list interleaves the managedFields'
many small dicts and strings with the objects the cache keeps, and once they are freed the scattered pools
cannot be given back to the system.

Cuts (`cut_list_managed_fields`): each `"managedFields":[` in the body, then the first `]` after it
(`managedfields.array_end`, with the same shape and ASCII checks); the next search starts after that `]`.

Why the result is exact (body B valid JSON, cut C = B with the n spans replaced by the marker, C valid):
- in valid JSON every occurrence of the key pattern is a key whose value is the array opened at its `[`,
  outside a string: the quote after `managedFields` follows a letter, so it is unescaped and cannot open a
  string (outside strings a letter belongs to true/false/null, never followed by a quote); it closes one,
  and `:[` makes that string a key with an array value;
- lex B and C side by side, aligned on their common bytes. Up to the first span whose `]` lies inside a
  string of B, both lexers agree (a span ending at a `]` outside strings leaves B outside a string, as the
  complete marker string leaves C). After such a span B is inside a string and C outside; every quote
  toggles both, and a backslash is an error for the one outside a string, so until the next span they stay
  opposite. There B is outside a string (at the `[` of a key pattern), so C is inside one, and the marker's
  opening quote closes it, leaving `managedFields-cut-...` outside any string: invalid. With no next span,
  one of them ends inside a string: invalid. So every `]` cut at lies outside strings;
- then both lexers agree everywhere, and bracket depth is defined in both. A span runs from an array's `[`
  to the first `]` outside strings: a prefix of that array, never below its opening depth, and back at it
  only if the span is the whole array. C's final depth is B's (zero) minus the brackets the spans leave
  open, so C is valid only if every span is exactly one whole array: C decodes to B's value with n array
  values replaced by the marker string;
- the marker is unknowable to the server, so a decoded string equal to it is one of the n copies placed
  by a cut, each at its own position of the tree (or dropped by a duplicate key). Popping every
  `items[i].metadata.managedFields` and counting the copies among them: all n found proves every cut was
  exactly an item's managedFields, so the result is decode-then-strip (the items whose array was not cut —
  null, refused by the shape checks, whitespace after the key — are popped just the same). Fewer found, or
  C invalid: the original body is decoded, then its items popped.
The one deliberate exception of the watch path carries over: a body whose only defects lie inside the cut
spans (content discarded unread) is accepted; spans with non-ASCII bytes are never cut.
"""

from __future__ import annotations

from typing import Any

import orjson

from manager.client.managedfields import KEY, MARK, MARK_VALUE, OPEN, array_end


def cut_list_managed_fields(raw: bytes) -> tuple[bytearray, int] | None:
    """The body with every `"managedFields":[...]` array that passes `array_end`'s checks replaced by the
    marker, and how many were; None when none was. Where they sit is checked after decoding."""
    view = memoryview(raw)
    out = bytearray()
    copied = searched = cuts = 0
    while (at := raw.find(KEY, searched)) >= 0:
        at += OPEN
        close = array_end(raw, at, len(raw))
        if close < 0:
            searched = at  # left in place; decoded in full if it is an item's (popped below)
            continue
        out += view[copied:at]
        out += MARK
        copied = searched = close + 1
        cuts += 1
    if not cuts:
        return None
    out += view[copied:]
    return out, cuts


def strip_items(page: Any) -> int:
    """Pop `metadata.managedFields` from every item of a decoded list page; the number of marker copies
    among the popped values. Tolerates any shape (whatever is not a dict is left alone)."""
    found = 0
    items = page.get("items") if type(page) is dict else None
    if type(items) is not list:
        return 0
    for item in items:
        # orjson gives dict, list, str, int, float, bool and None: only a dict takes a string subscript and
        # pop(key, default), so one try block stands for the type checks (this runs per item).
        try:
            value = item["metadata"].pop("managedFields", None)
        except (KeyError, TypeError, AttributeError):
            continue
        if value == MARK_VALUE:
            found += 1
    return found


def decode_list_stripped(raw: bytes) -> Any:
    """`orjson.loads(raw)` with every item's `metadata.managedFields` removed, mostly without decoding them.

    Same result and same errors as decoding then popping (see the module docstring for the proof and its
    one exception): raises orjson.JSONDecodeError when the body is not JSON.
    """
    cut = cut_list_managed_fields(raw)
    if cut is not None:
        cuts = cut[1]
        try:
            page = orjson.loads(cut[0])
        except orjson.JSONDecodeError:
            page = None
        del cut  # the cut body (most of the list's size) is freed before anything else is allocated
        if page is not None and strip_items(page) == cuts:
            return page
        del page
    page = orjson.loads(raw)
    strip_items(page)
    return page
