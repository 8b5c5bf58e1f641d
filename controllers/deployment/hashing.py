"""The pod-template hash and template equality (upstream: pkg/controller/controller_utils.go `ComputeHash`,
pkg/controller/deployment/util/deployment_util.go `EqualIgnoreHash`).

Upstream hashes go-spew's dump of the Go struct, which cannot be reproduced here; a canonical JSON
serialisation of the normalised template is hashed instead, with the same FNV-1a 32, the same
collision-count suffix and the same rendering. That is safe because the new ReplicaSet is found by comparing
templates, never by hash.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

import orjson

POD_TEMPLATE_HASH_LABEL = "pod-template-hash"
# k8s.io/apimachinery/pkg/util/rand SafeEncodeString: no vowels (no words), no look-alike characters.
_SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_FNV32_OFFSET = 0x811C9DC5
_FNV32_PRIME = 0x01000193


def fnv1a_32(data: bytes) -> int:
    h = _FNV32_OFFSET
    for byte in data:
        h = ((h ^ byte) * _FNV32_PRIME) & 0xFFFFFFFF
    return h


def safe_encode(text: str) -> str:
    return "".join(_SAFE_ALPHABET[ord(c) % len(_SAFE_ALPHABET)] for c in text)


def normalise(value: Any) -> Any:
    """A copy where absent, null, empty maps and empty lists are one and the same, as for Go's semantic
    equality (nil and empty collections are equal; an unset field is its zero value)."""
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            n = normalise(v)
            if n is None or n == {} or n == []:
                continue
            out[k] = n
        return out
    if isinstance(value, list):
        return [normalise(v) for v in value]
    return value


def _without_hash(template: Mapping[str, Any]) -> Any:
    norm = normalise(template)
    labels = (norm.get("metadata") or {}).get("labels")
    if labels and POD_TEMPLATE_HASH_LABEL in labels:
        del labels[POD_TEMPLATE_HASH_LABEL]
        if not labels:
            del norm["metadata"]["labels"]
            if not norm["metadata"]:
                del norm["metadata"]
    return norm


def compute_hash(template: Mapping[str, Any], collision_count: int | None) -> str:
    """The `pod-template-hash` value (and new ReplicaSet name suffix) for a template."""
    data = orjson.dumps(normalise(template), option=orjson.OPT_SORT_KEYS)
    if collision_count is not None:
        # Upstream writes the count as a little-endian uint32 into an 8-byte buffer.
        data += struct.pack("<I", collision_count & 0xFFFFFFFF) + b"\0\0\0\0"
    return safe_encode(str(fnv1a_32(data)))


def equal_ignore_hash(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two pod templates are semantically equal once the pod-template-hash label is ignored."""
    return bool(_without_hash(a) == _without_hash(b))
