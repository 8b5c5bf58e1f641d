"""Decode a watch line without decoding its `metadata.managedFields` — for informers that drop them anyway.

managedFields are a large part of a pod's bytes and most of its JSON containers (fieldsV1 is a tree of tiny
objects): decoding them and later freeing them is most of the cost of a watch event, and the default
transform throws them away right after decoding. Here the array is cut out of the bytes and replaced by a
marker before `orjson.loads`; the result is used only when it is provably what decode-then-strip gives.

How the cut is found (no Python loop per token, two memchr-speed searches): the first `"managedFields":[`
in the line, then the first `]` after it. ManagedFieldsEntry holds no arrays (its values are strings and
fieldsV1 objects), so in valid JSON the array ends at the first `]` outside a string.

Why the result is exact for every line that decodes today (line = P + T + R, cut = P + MARK + R):
- if that `]` lay inside a string, `line` and `cut` could not both be valid JSON: lexing R from inside a
  string (line) and from outside one (cut), every quote toggles both lexers, so their states stay opposite;
  a backslash is then an error for the one outside a string, and at the end one of them is still inside a
  string. So a valid line whose cut also decodes was cut exactly at the closing `]` of that array (T has no
  `]` before it, hence no nested array), and `cut` decodes to `line`'s object with that one value replaced;
- MARK is a random per-process string: finding it as the top-level `object.metadata.managedFields` proves
  the cut array was that very value (not a pod template's or a custom resource's), so deleting it gives
  exactly decode-then-strip. Anything else (cut fails to decode, marker elsewhere or absent, no `]`,
  whitespace after the key, an array not shaped `[]` or `[{...}]`, non-ASCII bytes in it) decodes the
  original bytes as before.
Malformed lines therefore fail as before, with one deliberate exception: a line whose only defect lies
inside the cut span itself (content the transform discards unread; precisely: the line is invalid, the cut
is valid, which implies the span is not a JSON value) is accepted. Non-ASCII bytes there — the likeliest
corruption, invalid UTF-8 — are excluded: such arrays are decoded in full.
"""

from __future__ import annotations

import secrets
from typing import Any

import orjson

from manager.client.watch import WatchEvent, decode_watch_span

KEY = b'"managedFields":['
OPEN = len(KEY) - 1  # offset of the `[` in KEY
MARK_VALUE = f"managedFields-cut-{secrets.token_hex(16)}"  # unknowable to the server: see the docstring
MARK = orjson.dumps(MARK_VALUE)
_OPEN_BRACE, _CLOSE_BRACE = ord("{"), ord("}")


def array_end(buffer: bytes, at: int, end: int) -> int:
    """The offset of the first `]` after the `[` at `at` (before `end`), or -1 when there is none or the
    span is not to be cut: an array that is not `[]` or `[{...}]` (entries are objects), or holds non-ASCII
    bytes, is left to the full decode. The bytes alone prove nothing: the decoder checks the result."""
    close = buffer.find(b"]", at, end)
    if close < 0:
        return -1
    if close != at + 1 and (buffer[at + 1] != _OPEN_BRACE or buffer[close - 1] != _CLOSE_BRACE):
        return -1
    if not buffer[at:close].isascii():
        return -1
    return close


def cut_managed_fields(buffer: bytes, start: int = 0, end: int | None = None) -> bytes | None:
    """The line `buffer[start:end]` with its first `"managedFields":[...]` array replaced by the marker;
    None when there is none to cut (see `array_end`)."""
    if end is None:
        end = len(buffer)
    at = buffer.find(KEY, start, end)
    if at < 0:
        return None
    at += OPEN
    close = array_end(buffer, at, end)
    if close < 0:
        return None
    view = memoryview(buffer)
    return b"".join((view[start:at], MARK, view[close + 1 : end]))


def decode_watch_span_stripped(buffer: bytes, start: int, end: int) -> WatchEvent:
    """`decode_watch_span()` with `object.metadata.managedFields` removed, mostly without decoding them.

    Same result and same errors as decoding then popping managedFields (see the module docstring for the
    proof and its one exception); raises ValueError when the line is not a watch event.
    """
    cut = cut_managed_fields(buffer, start, end)
    if cut is not None:
        # Accept only when the marker is the top-level object's metadata.managedFields (see above). One
        # try block instead of a type check per level (this runs per watch event): orjson gives only
        # dict, list, str, int, float, bool and None, and of those only a dict takes a string subscript
        # and `pop(key, default)`, so reaching the comparison proves event, object and metadata are
        # dicts. Popping before the comparison is harmless: a rejected cut's object is thrown away.
        try:
            event = orjson.loads(cut)
            obj = event["object"]
            marked = obj["metadata"].pop("managedFields", None) == MARK_VALUE
            event_type = event["type"]
        except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError):
            pass
        else:
            if marked and type(event_type) is str:
                return event_type, obj
    event_type, obj = decode_watch_span(buffer, start, end)
    meta = obj.get("metadata")
    if type(meta) is dict:
        meta.pop("managedFields", None)
    return event_type, obj


def decode_object_stripped(body: bytes) -> Any:
    """`orjson.loads(body)` with the top-level `metadata.managedFields` removed, mostly without decoding them:
    for a write's answer whose managedFields the caller never reads. Same proof as a watch line's (the
    marker must come back as the object's own metadata.managedFields); anything else decodes in full."""
    cut = cut_managed_fields(body)
    if cut is not None:
        try:
            obj = orjson.loads(cut)
            if obj["metadata"].pop("managedFields", None) == MARK_VALUE:
                return obj
        except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError):
            pass
    obj = orjson.loads(body)
    meta = obj.get("metadata") if type(obj) is dict else None
    if type(meta) is dict:
        meta.pop("managedFields", None)
    return obj


def decode_watch_line_stripped(line: bytes) -> WatchEvent:
    """`decode_watch_span_stripped` of a whole line."""
    return decode_watch_span_stripped(line, 0, len(line))
