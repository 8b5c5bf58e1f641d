"""Decoding of Kubernetes protobuf request bodies for the objects kubectl's generators send that way
(`kubectl create namespace|configmap|secret|deployment|job|cronjob|service|serviceaccount|role|...`).

The body is the `k8s\\x00` magic then a runtime.Unknown envelope (typeMeta, raw). The field numbers
(kubesim.codec.protobuf_schema) were read off bytes kubectl 1.32 actually sends. Non-pointer fields arrive
even when zero, so zero values are dropped unless the field is a pointer (`?` kinds). Fields not listed are
skipped, as a server would prune them."""

from __future__ import annotations

import base64
from typing import Any

from kubesim.codec.protobuf_schema import M

JSON = dict[str, Any]
Field = tuple[str, str]
MAGIC = b"k8s\x00"
PROTOBUF = "application/vnd.kubernetes.protobuf"


class ProtobufError(ValueError):
    pass


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ProtobufError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return result, pos


def _fields(data: bytes) -> list[tuple[int, int, Any]]:
    pos, out = 0, []
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        value: Any
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 2:
            size, pos = _varint(data, pos)
            if pos + size > len(data):
                raise ProtobufError("truncated field")
            value, pos = data[pos : pos + size], pos + size
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            value, pos = data[pos : pos + size], pos + size
        else:
            raise ProtobufError(f"unsupported wire type {wire}")
        out.append((number, wire, value))
    return out


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _text(value: Any) -> str:
    if not isinstance(value, bytes):
        raise ProtobufError("expected a length-delimited string")
    return value.decode("utf-8")


def _map_entry(value: bytes, kind: str) -> tuple[str, Any]:
    key, item = "", b""
    for number, _, raw in _fields(value):
        if number == 1:
            key = _text(raw)
        elif number == 2:
            item = raw
    if kind == "ms":
        return key, _text(item) if item else ""
    if kind == "my":
        return key, base64.b64encode(item).decode()
    quantity = decode_message(item, {1: ("string", "s")}) if item else {}
    return key, quantity.get("string", "")


def _scalar(kind: str, value: Any) -> Any:
    if kind == "s":
        return _text(value)
    if kind == "i":
        return _signed(value)
    if kind == "b":
        return bool(value)
    if kind == "y":
        return value
    if kind == "ios":
        parts = decode_message(value, {1: ("type", "i"), 2: ("intVal", "i"), 3: ("strVal", "s")})
        return parts.get("strVal", "") if parts.get("type") == 1 else parts.get("intVal", 0)
    return decode_message(value, M[kind])


def _is_zero(value: Any) -> bool:
    return value in ("", 0, False, b"") or value == {} or value == []


def decode_message(data: bytes, spec: dict[int, Field]) -> JSON:
    obj: JSON = {}
    for number, _, value in _fields(data):
        field = spec.get(number)
        if field is None:
            continue
        name, kind = field
        keep_zero = kind.endswith("?")
        kind = kind.rstrip("?")
        if kind in ("ms", "my", "mq"):
            key, item = _map_entry(value, kind)
            obj.setdefault(name, {})[key] = item
        elif kind.startswith("["):
            obj.setdefault(name, []).append(_scalar(kind[1:-1], value))
        else:
            decoded = _scalar(kind, value)
            if keep_zero or not _is_zero(decoded):
                obj[name] = decoded
    return obj


def decode(body: bytes) -> JSON:
    """A protobuf request body as the JSON object it stands for; ProtobufError when it cannot be read."""
    if not body.startswith(MAGIC):
        raise ProtobufError("missing the k8s protobuf magic prefix")
    envelope = decode_message(body[len(MAGIC) :], M["Unknown"])
    type_meta = envelope.get("typeMeta") or {}
    kind = type_meta.get("kind", "")
    if kind not in M or kind in ("Unknown", "TypeMeta"):
        raise ProtobufError(f"protobuf decoding of kind {kind!r} is not supported")
    obj = {"apiVersion": type_meta.get("apiVersion", ""), "kind": kind}
    obj.update(decode_message(envelope.get("raw", b""), M[kind]))
    return obj
