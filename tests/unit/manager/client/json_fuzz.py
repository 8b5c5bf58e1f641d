"""Random JSON for the managedFields cut's fuzz tests (test_managedfields_cut.py, test_managedfields_list.py):
strings made of the bytes the cut's lexing argument turns on, values nesting them, managedFields entries, and
byte-level mutations of an encoded body."""

from __future__ import annotations

import random
from typing import Any

ALPHABET = ['"', "\\", "]", "[", "{", "}", ":", ",", " ", "a", "managedFields", '"managedFields":[', "\u00e9"]
MUTATION_BYTES = b'"\\]}[{:, a\xff'


def random_string(rng: random.Random) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 6)))


def random_value(rng: random.Random, depth: int) -> Any:
    kind = rng.randint(0, 6 if depth < 3 else 2)
    if kind == 0:
        return random_string(rng)
    if kind == 1:
        return rng.choice([None, True, 3, -1.5])
    if kind == 2:
        return {}
    if kind in (3, 4):
        return {random_string(rng): random_value(rng, depth + 1) for _ in range(rng.randint(1, 3))}
    if kind == 5:
        return {"managedFields": [random_entry(rng) for _ in range(rng.randint(0, 2))]}
    return [random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]


def random_entry(rng: random.Random) -> Any:
    if rng.random() < 0.1:
        return random_value(rng, 2)  # not an entry at all
    entry: dict[str, Any] = {"manager": random_string(rng), "operation": "Update"}
    if rng.random() < 0.8:
        entry["fieldsV1"] = {random_string(rng): {random_string(rng): {}} for _ in range(rng.randint(0, 3))}
    return entry


def mutate(body: bytes, rng: random.Random) -> bytes:
    """`body` with one or two bytes deleted, inserted or replaced."""
    data = bytearray(body)
    for _ in range(rng.randint(1, 2)):
        at = rng.randrange(len(data) + 1)
        op = rng.randint(0, 2)
        if op == 0 and at < len(data):
            del data[at]
        elif op == 1:
            data.insert(at, rng.choice(MUTATION_BYTES))
        elif at < len(data):
            data[at] = rng.choice(MUTATION_BYTES)
    return bytes(data)
