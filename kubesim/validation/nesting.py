"""How deep an object may nest. kube-apiserver has no limit of its own short of its JSON decoder's 10000
levels, but kubesim keeps every stored object as orjson bytes, and orjson refuses to encode past 255 levels:
an object that deep would fail in the store as a 500. So writes are refused up front, as a 400, at
MAX_DEPTH levels, which leaves room for what the server wraps around an object (managedFields mirror its
fields a few levels down; watch events and Tables put it inside an envelope)."""

from __future__ import annotations

from typing import Any

import orjson

MAX_DEPTH = 200


def deeper_than(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether `value` nests more than `limit` containers deep (the value itself is level 1). Iterative, so
    it cannot hit the recursion limit it protects against, and it stops at the first branch too deep."""
    if not isinstance(value, (dict, list)):
        return False
    try:  # a path holds at most as many containers as the JSON has brackets (those in strings count too)
        encoded = orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):  # past orjson's depth, or not JSON (YAML keys): walk it
        pass
    else:
        if encoded.count(b"[") + encoded.count(b"{") <= limit:
            return False
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        children = node.values() if isinstance(node, dict) else node
        for child in children:
            if isinstance(child, (dict, list)) and child:
                stack.append((child, depth + 1))
            elif isinstance(child, (dict, list)) and depth + 1 > limit:
                return True
    return False


def too_deep_message(what: str, limit: int = MAX_DEPTH) -> str:
    return f"{what}: exceeded max depth {limit}"
