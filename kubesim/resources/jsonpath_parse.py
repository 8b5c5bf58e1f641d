"""Parser of the Kubernetes JSONPath dialect (k8s.io/client-go/util/jsonpath): a template of text and `{...}`
actions, each action a sequence of nodes. kubesim.resources.jsonpath evaluates what this builds.

The grammar is upstream's, quirks included, since the apiserver accepts and evaluates exactly that: `[*]` is
the slice `[:]`; `['a.b']` is the two fields `.a.b`; in a filter the first run of `!<>=` characters is the
operator (so `=` alone parses and only fails when evaluated); `..` may not follow `..`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_DICT_KEY = re.compile(r"^'([^']*)'$")
_SLICE = re.compile(r"^(-?[0-9]*)(:-?[0-9]*)?(:-?[0-9]*)?$")
_FILTER = re.compile(r"^([^!<>=]+)([!<>=]+)(.+?)$", re.DOTALL)
_TERMINATORS = frozenset(" \t\r\n.,[]$@{}")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "a": "\a", "b": "\b", "f": "\f"}


class JSONPathError(ValueError):
    """A template that does not parse, or an evaluation upstream reports as an error."""


@dataclass(frozen=True)
class Field:
    name: str


@dataclass(frozen=True)
class Wildcard:
    pass


@dataclass(frozen=True)
class Recursive:
    pass


@dataclass(frozen=True)
class Slice:
    """`[start:end:step]`, None where not given; `derived` marks `[i]` (end i + 1, wrapping with start)."""

    start: int | None
    end: int | None
    step: int | None
    derived: bool = False


@dataclass(frozen=True)
class Filter:
    left: tuple[Node, ...]
    op: str  # "exists", or the comparison operator as written
    right: tuple[Node, ...]


@dataclass(frozen=True)
class Union:
    branches: tuple[tuple[Node, ...], ...]


@dataclass(frozen=True)
class Literal:
    """A quoted string, number or boolean; top-level text outside actions is a str Literal too."""

    value: str | int | float | bool


@dataclass(frozen=True)
class Identifier:
    name: str  # range / end: parsed, but never evaluated for a printer column


Node = Field | Wildcard | Recursive | Slice | Filter | Union | Literal | Identifier
Action = tuple[Node, ...]


def parse_template(text: str) -> list[Action | str]:
    """Text outside braces comes back as str, each `{...}` action as its node tuple."""
    parts: list[Action | str] = []
    pos = 0
    while pos < len(text):
        brace = text.find("{", pos)
        if brace < 0:
            parts.append(text[pos:])
            break
        if brace > pos:
            parts.append(text[pos:brace])
        nodes, pos = _Action(text, brace + 1).parse()
        parts.append(nodes)
    return parts


def parse_action(text: str) -> Action:
    """The nodes of `text` as if written `{text}` (filter operands, union branches)."""
    nodes, _ = _Action(text + "}", 0).parse()
    return nodes


class _Action:
    def __init__(self, text: str, pos: int) -> None:
        self.text, self.pos = text, pos
        self.nodes: list[Node] = []

    def parse(self) -> tuple[Action, int]:
        text = self.text
        while True:
            rest = text[self.pos :]
            if rest.startswith("}"):
                return tuple(self.nodes), self.pos + 1
            if rest.startswith("[?("):
                self._filter()
                continue
            if rest.startswith(".."):
                self._recursive()
                continue
            if not rest or rest[0] in "\r\n":
                raise JSONPathError("unclosed action")
            char = rest[0]
            if char in " @$":
                self.pos += 1
            elif char == "[":
                self._array()
            elif char in "\"'":
                self._quote(char)
            elif char == ".":
                self.pos += 1
                self._field()
            elif char in "+-" or char.isdigit():
                self._number()
            elif char == "_" or char.isalnum():
                self._identifier()
            else:
                raise JSONPathError(f"unrecognized character in action: {char!r}")

    def _word(self) -> str:
        """Up to the next unescaped terminator; a backslash keeps the following character."""
        start = self.pos
        while self.pos < len(self.text):
            char = self.text[self.pos]
            if char == "\\":
                self.pos += 2
            elif char in _TERMINATORS:
                break
            else:
                self.pos += 1
        return self.text[start : self.pos]

    def _field(self) -> None:
        word = self._word()
        self.nodes.append(Wildcard() if word == "*" else Field(word.replace("\\", "")))

    def _recursive(self) -> None:
        if self.nodes and isinstance(self.nodes[-1], Recursive):
            raise JSONPathError("invalid multiple recursive descent")
        self.pos += 2
        self.nodes.append(Recursive())
        if self.pos < len(self.text) and (self.text[self.pos] == "_" or self.text[self.pos].isalnum()):
            self._field()

    def _identifier(self) -> None:
        word = self._word()
        self.nodes.append(Literal(word == "true") if word in ("true", "false") else Identifier(word))

    def _number(self) -> None:
        start = self.pos
        self.pos += 1  # a sign or the first digit
        while self.pos < len(self.text) and (self.text[self.pos] == "." or self.text[self.pos].isdigit()):
            self.pos += 1
        word = self.text[start : self.pos]
        try:
            self.nodes.append(Literal(int(word)))
        except ValueError:
            try:
                self.nodes.append(Literal(float(word)))
            except ValueError:
                raise JSONPathError(f"cannot parse number {word}") from None

    def _quote(self, quote: str) -> None:
        start = self.pos
        self.pos += 1
        while True:
            if self.pos >= len(self.text) or self.text[self.pos] == "\n":
                raise JSONPathError("unterminated quoted string")
            if self.text[self.pos] == quote and self.text[self.pos - 1] != "\\":
                break
            self.pos += 1
        self.pos += 1
        self.nodes.append(Literal(_unquote(self.text[start + 1 : self.pos - 1])))

    def _array(self) -> None:
        end = self.text.find("]", self.pos)
        newline = self.text.find("\n", self.pos)
        if end < 0 or 0 <= newline < end:
            raise JSONPathError("unterminated array")
        inner, self.pos = self.text[self.pos + 1 : end], end + 1
        if inner == "*":
            inner = ":"
        if "," in inner:
            self.nodes.append(Union(tuple(parse_action(f"[{part.strip(' ')}]") for part in inner.split(","))))
            return
        key = _DICT_KEY.match(inner)
        if key:
            self.nodes.extend(parse_action("." + key.group(1)))
            return
        self.nodes.append(_slice(inner))

    def _filter(self) -> None:
        self.pos += 3
        start, opened, closed, pair = self.pos, False, False, ""
        while True:
            if self.pos >= len(self.text) or self.text[self.pos] == "\n":
                raise JSONPathError("unterminated filter")
            char = self.text[self.pos]
            self.pos += 1
            if char in "\"'":
                if not opened:
                    opened, pair = True, char
                elif char == pair and self.text[self.pos - 2] != "\\":
                    closed = True
            elif char == ")" and opened == closed:
                break
        if self.text[self.pos : self.pos + 1] != "]":
            raise JSONPathError("unclosed array expect ]")
        body = self.text[start : self.pos - 1]
        self.pos += 1
        match = _FILTER.match(body)
        if match is None:
            self.nodes.append(Filter(parse_action(body), "exists", ()))
        else:
            left, op, right = match.groups()
            self.nodes.append(Filter(parse_action(left), op, parse_action(right)))


def _slice(inner: str) -> Slice:
    match = _SLICE.match(inner)
    if match is None:
        raise JSONPathError(f"invalid array index {inner}")
    first, second, third = (match.group(i) or "" for i in (1, 2, 3))

    def number(text: str) -> int | None:
        if not text:
            return None
        try:
            return int(text)
        except ValueError:
            raise JSONPathError(f"array index {text} is not a number") from None

    start = number(first)
    if not second:  # `[i]`: end is start + 1, derived so that `[-1]` wraps to the length
        return Slice(start, (start or 0) + 1, None, derived=True)
    return Slice(start, number(second[1:]), number(third[1:]))


def _unquote(body: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(body):
        char = body[i]
        if char != "\\" or i + 1 >= len(body):
            out.append(char)
            i += 1
            continue
        code = body[i + 1]
        if code in ("u", "U", "x"):
            width = {"u": 4, "U": 8, "x": 2}[code]
            try:
                out.append(chr(int(body[i + 2 : i + 2 + width], 16)))
            except ValueError:
                raise JSONPathError(f"unquote string {body} error invalid syntax") from None
            i += 2 + width
            continue
        if code not in _ESCAPES:
            raise JSONPathError(f"unquote string {body} error invalid syntax")
        out.append(_ESCAPES[code])
        i += 2
    return "".join(out)
