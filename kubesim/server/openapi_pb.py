"""The Swagger 2 document as gnostic's protobuf `openapi.v2.Document` (github.com/google/gnostic-models,
openapiv2/OpenAPIv2.proto), the form kube-apiserver serves for
`Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf`.

kubectl asks for exactly that when it validates client-side (a kind whose OpenAPI v3 has no fieldValidation,
e.g. a custom resource whose CRD is not there yet) and fails the object on anything but a protobuf answer.
Only the parts of Swagger 2 that kubesim's document uses are encoded; vendor extensions, enum values and
defaults travel as gnostic does, in an `Any` holding their YAML (JSON text is YAML).
"""

from __future__ import annotations

import struct
from typing import Any

import orjson

JSON = dict[str, Any]
MEDIA_TYPE = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"

# Schema fields by JSON name: (field number, wire kind); $ref, items, properties etc. are handled apart
_SCHEMA_SCALARS: dict[str, tuple[int, str]] = {
    "format": (2, "string"),
    "title": (3, "string"),
    "description": (4, "string"),
    "multipleOf": (6, "double"),
    "maximum": (7, "double"),
    "exclusiveMaximum": (8, "bool"),
    "minimum": (9, "double"),
    "exclusiveMinimum": (10, "bool"),
    "maxLength": (11, "int"),
    "minLength": (12, "int"),
    "pattern": (13, "string"),
    "maxItems": (14, "int"),
    "minItems": (15, "int"),
    "uniqueItems": (16, "bool"),
    "maxProperties": (17, "int"),
    "minProperties": (18, "int"),
    "discriminator": (26, "string"),
    "readOnly": (27, "bool"),
}
# Query/form (and path/header) parameter sub-schemas: the same fields, numbered apart
_QUERY_FIELDS = {
    "required": 1,
    "in": 2,
    "description": 3,
    "name": 4,
    "type": 6,
    "format": 7,
    "uniqueItems": 20,
}
_PATH_FIELDS = {
    "required": 1,
    "in": 2,
    "description": 3,
    "name": 4,
    "type": 5,
    "format": 6,
    "uniqueItems": 19,
}
_SUB_SCHEMA = {"header": (1, _PATH_FIELDS), "formData": (2, _QUERY_FIELDS), "query": (3, _QUERY_FIELDS)}
_OPERATIONS = {"get": 2, "put": 3, "post": 4, "delete": 5, "options": 6, "head": 7, "patch": 8}


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64s as ten-byte two's complement, as protobuf does
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _bytes(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _string(number: int, text: str) -> bytes:
    return _bytes(number, text.encode()) if text else b""


def _scalar(number: int, kind: str, value: Any) -> bytes:
    if kind == "string":
        return _string(number, str(value))
    if kind == "bool":
        return _varint(number << 3) + b"\x01" if value else b""
    if kind == "int":
        return _varint(number << 3) + _varint(int(value)) if value else b""
    return _varint(number << 3 | 1) + struct.pack("<d", float(value)) if value else b""


def _any(value: Any) -> bytes:
    return _string(2, orjson.dumps(value).decode())


def _extensions(number: int, node: JSON) -> bytes:
    return b"".join(
        _bytes(number, _string(1, key) + _bytes(2, _any(value)))
        for key, value in node.items()
        if key.startswith("x-")
    )


def schema(node: JSON) -> bytes:
    """One JSON Schema (a definition, a property, an array's items, a response's schema)."""
    out = [_string(1, node.get("$ref", ""))]
    for key, (number, kind) in _SCHEMA_SCALARS.items():
        if key in node:
            out.append(_scalar(number, kind, node[key]))
    if "default" in node:
        out.append(_bytes(5, _any(node["default"])))
    out.extend(_string(19, name) for name in node.get("required", ()))
    out.extend(_bytes(20, _any(value)) for value in node.get("enum", ()))
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        out.append(_bytes(21, _bytes(1, schema(extra))))
    elif isinstance(extra, bool):
        out.append(_bytes(21, _varint(2 << 3) + (b"\x01" if extra else b"\x00")))
    kinds = node.get("type")
    if kinds:
        out.append(
            _bytes(22, b"".join(_string(1, k) for k in ([kinds] if isinstance(kinds, str) else kinds)))
        )
    items = node.get("items")
    if items:
        out.append(
            _bytes(
                23, b"".join(_bytes(1, schema(i)) for i in (items if isinstance(items, list) else [items]))
            )
        )
    out.extend(_bytes(24, schema(sub)) for sub in node.get("allOf", ()))
    properties = node.get("properties")
    if properties is not None:
        named = (_bytes(1, _string(1, name) + _bytes(2, schema(sub))) for name, sub in properties.items())
        out.append(_bytes(25, b"".join(named)))
    if "example" in node:
        out.append(_bytes(30, _any(node["example"])))
    out.append(_extensions(31, node))
    return b"".join(out)


def _parameter(param: JSON) -> bytes:
    """A ParametersItem: a $ref, a body parameter, or a query/path/header/formData one."""
    if "$ref" in param:
        return _bytes(2, _string(1, param["$ref"]))
    where = param.get("in", "")
    if where == "body":
        body = (
            _string(1, param.get("description", ""))
            + _string(2, param.get("name", ""))
            + _string(3, where)
            + _scalar(4, "bool", param.get("required", False))
            + _bytes(5, schema(param.get("schema") or {}))
            + _extensions(6, param)
        )
        return _bytes(1, _bytes(1, body))
    number, fields = _SUB_SCHEMA.get(where, (4, _PATH_FIELDS))
    kinds = {"required": "bool", "uniqueItems": "bool"}
    sub = b"".join(
        _scalar(fields[key], kinds.get(key, "string"), param[key]) for key in fields if key in param
    )
    sub += _extensions(23 if fields is _QUERY_FIELDS else 22, param)
    return _bytes(1, _bytes(2, _bytes(number, sub)))


def _operation(op: JSON) -> bytes:
    out = [b"".join(_string(1, tag) for tag in op.get("tags", ()))]
    out += [_string(2, op.get("summary", "")), _string(3, op.get("description", ""))]
    out.append(_string(5, op.get("operationId", "")))
    out += [_string(6, t) for t in op.get("produces", ())] + [_string(7, t) for t in op.get("consumes", ())]
    out += [_bytes(8, _parameter(p)) for p in op.get("parameters", ())]
    responses = b""
    for code, response in (op.get("responses") or {}).items():
        if "$ref" in response:
            value = _bytes(2, _string(1, response["$ref"]))
        else:
            body = _string(1, response.get("description", ""))
            if "schema" in response:
                body += _bytes(2, _bytes(1, schema(response["schema"])))
            value = _bytes(1, body + _extensions(5, response))
        responses += _bytes(1, _string(1, code) + _bytes(2, value))
    if responses:
        out.append(_bytes(9, responses))
    out += [_string(10, s) for s in op.get("schemes", ())]
    out += [_scalar(11, "bool", op.get("deprecated", False)), _extensions(13, op)]
    return b"".join(out)


def _path_item(item: JSON) -> bytes:
    out = [_string(1, item.get("$ref", ""))]
    out += [_bytes(number, _operation(item[verb])) for verb, number in _OPERATIONS.items() if verb in item]
    out += [_bytes(9, _parameter(p)) for p in item.get("parameters", ())]
    out.append(_extensions(10, item))
    return b"".join(out)


def encode_document(doc: JSON) -> bytes:
    """The whole Swagger 2 document as an `openapi.v2.Document` message."""
    info = doc.get("info") or {}
    out = [_string(1, doc.get("swagger", "2.0"))]
    out.append(_bytes(2, b"".join(_string(n, info.get(k, "")) for n, k in ((1, "title"), (2, "version")))))
    paths = b"".join(
        _bytes(2, _string(1, p) + _bytes(2, _path_item(i))) for p, i in doc.get("paths", {}).items()
    )
    out.append(_bytes(8, paths))
    definitions = (
        _bytes(1, _string(1, n) + _bytes(2, schema(s))) for n, s in doc.get("definitions", {}).items()
    )
    out.append(_bytes(9, b"".join(definitions)))
    out.append(_extensions(16, doc))
    return b"".join(out)
