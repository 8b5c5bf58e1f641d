"""The metadata decode check's one-pass shortcut (`_passes`) never hides an error the full check
(`_first_error`) reports: over metadata whose fields are swapped for values of every JSON type, both agree."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from kubesim.validation.meta_types import _first_error, meta_type_error

VALID: dict[str, Any] = {
    "name": "web-1",
    "generateName": "web-",
    "namespace": "default",
    "uid": "0f6e7c2a-1b2c-4d5e-8f90-123456789abc",
    "resourceVersion": "42",
    "generation": 3,
    "creationTimestamp": "2026-12-06T00:00:00Z",
    "deletionTimestamp": None,
    "deletionGracePeriodSeconds": 30,
    "labels": {"app": "web", "tier": None},
    "annotations": {"note": "x"},
    "finalizers": ["example.com/cleanup"],
    "ownerReferences": [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "u1", "controller": True}
    ],
    "managedFields": [
        {
            "manager": "kubectl",
            "operation": "Update",
            "apiVersion": "v1",
            "time": "2026-12-06T00:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {}},
        }
    ],
}
ODD_VALUES: list[Any] = [
    None, True, 0, -1, 2**63, 1.5, "", "x", "2026-13-45T00:00:00Z", [], ["a"], [1], {}, {"k": 1}, {"k": "v"},
    [{"apiVersion": 1}], [{"manager": ["m"]}], [{"time": "yesterday"}],
]  # fmt: skip


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path] if path else []
    if isinstance(value, dict):
        for key, child in value.items():
            found += _paths(child, (*path, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += _paths(child, (*path, index))
    return found


def _mutants(seed: int, count: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    places = _paths(VALID)
    out = []
    for _ in range(count):
        meta = copy.deepcopy(VALID)
        for _ in range(rng.randint(1, 3)):
            *parent_path, last = rng.choice(places)
            parent: Any = meta
            try:
                for step in parent_path:
                    parent = parent[step]
                parent[last] = copy.deepcopy(rng.choice(ODD_VALUES))
            except (KeyError, IndexError, TypeError):  # an earlier swap replaced the way there
                continue
        out.append(meta)
    return out


def test_the_valid_metadata_passes() -> None:
    assert meta_type_error(VALID, "Pod") is None
    assert _first_error(VALID, "Pod") is None


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_shortcut_agrees_with_the_full_check(seed: int) -> None:
    mutants = _mutants(seed, 1500)
    errors = 0
    for meta in mutants:
        expected = _first_error(meta, "Pod")
        assert meta_type_error(meta, "Pod") == expected, meta
        errors += expected is not None
    assert errors > len(mutants) // 4  # the swaps do make errors: the comparison is not of passes only
