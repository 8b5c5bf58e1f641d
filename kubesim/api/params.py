"""Query parameters decoded as kube-apiserver's parameter codec decodes them: Go's strconv.ParseBool and
ParseInt (no spaces, underscores or fractions, which Python's int() would take), 400 BadRequest otherwise."""

from __future__ import annotations

import re

from aiohttp import web

from kubesim.status import errors

_TRUE = frozenset(("1", "t", "T", "TRUE", "true", "True"))
_FALSE = frozenset(("0", "f", "F", "FALSE", "false", "False"))


def parse_bool(value: str | None, name: str) -> bool | None:
    """Go strconv.ParseBool; None when absent; 400 when unparsable."""
    if value is None:
        return None
    if value in _TRUE:
        return True
    if value in _FALSE or value == "":
        return False
    raise errors.bad_request(f'strconv.ParseBool: parsing "{value}": invalid syntax for parameter {name}')


def query_bool(request: web.Request, name: str) -> bool:
    return parse_bool(request.query.get(name), name) or False


_GO_INT = re.compile(r"[+-]?[0-9]+")
_INT64 = (-(2**63), 2**63 - 1)


def parse_int(raw: str, name: str) -> int:
    """Go strconv.ParseInt(raw, 10, 64): no spaces, underscores or fractions (Python's int() takes them)."""
    if not _GO_INT.fullmatch(raw):
        raise errors.bad_request(f'strconv.ParseInt: parsing "{raw}": invalid syntax for parameter {name}')
    value = int(raw)
    if not _INT64[0] <= value <= _INT64[1]:
        raise errors.bad_request(
            f'strconv.ParseInt: parsing "{raw}": value out of range for parameter {name}'
        )
    return value


def query_int(request: web.Request, name: str) -> int | None:
    raw = request.query.get(name)
    if raw is None or raw == "":
        return None
    return parse_int(raw, name)


_LIST_INTS = ("timeoutSeconds", "limit")
_LIST_BOOLS = ("watch", "allowWatchBookmarks", "sendInitialEvents")


def check_list_options(request: web.Request) -> None:
    """The typed ListOptions parameters of a list or watch, decoded as kube-apiserver's parameter codec does
    for every such request (a list ignores timeoutSeconds, but `-x` still fails to decode: 400)."""
    query = request.query
    if not query:
        return
    for name in _LIST_INTS:
        raw = query.get(name)
        if raw:
            parse_int(raw, name)
    for name in _LIST_BOOLS:
        parse_bool(query.get(name), name)
