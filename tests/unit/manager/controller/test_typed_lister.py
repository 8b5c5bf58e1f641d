"""TypedLister validates each object version once and remembers a rejection as well as a model."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, field_validator

from manager import CustomResource, InvalidObject, TypedLister


class Spec(BaseModel):
    size: int

    @field_validator("size")
    @classmethod
    def _even(cls, value: int) -> int:
        if value % 2:
            raise ValueError("must be even")
        return value


class Box(CustomResource):
    group = "example.io"
    version = "v1"
    kind = "Box"
    spec: Spec


class FakeLister:
    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {}

    def get_by_key(self, key: str) -> dict[str, Any] | None:
        return self.objects.get(key)

    def list_keys(self) -> list[str]:
        return list(self.objects)


def box(name: str, size: Any, rv: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": rv}, "spec": {"size": size}}


@pytest.fixture
def lister() -> FakeLister:
    return FakeLister()


def test_one_validation_per_object_version(lister: FakeLister) -> None:
    typed = TypedLister(Box, lister)  # type: ignore[arg-type]
    lister.objects["ns/a"] = box("a", 2, "1")
    first = typed.get("ns", "a")
    assert first is not None and first.spec.size == 2 and first.raw is not None
    assert typed.get("ns", "a") is first
    assert typed.list() == [first]
    assert typed.validations == 1
    lister.objects["ns/a"] = box("a", 4, "2")
    second = typed.get_by_key("ns/a")
    assert second is not None and second.spec.size == 4 and typed.validations == 2


def test_an_invalid_version_raises_every_read_and_is_validated_once(lister: FakeLister) -> None:
    typed = TypedLister(Box, lister)  # type: ignore[arg-type]
    lister.objects["ns/odd"] = box("odd", 3, "5")
    lister.objects["ns/even"] = box("even", 2, "6")
    for _ in range(3):
        with pytest.raises(InvalidObject) as caught:
            typed.get("ns", "odd")
    assert caught.value.message.startswith("spec.size: ")
    assert "must be even" in caught.value.message
    assert caught.value.object is lister.objects["ns/odd"]
    assert [b.metadata.name for b in typed.list()] == ["even"]
    assert typed.validations == 2


def test_a_vanished_object_is_none_and_forgotten(lister: FakeLister) -> None:
    typed = TypedLister(Box, lister)  # type: ignore[arg-type]
    lister.objects["ns/a"] = box("a", 2, "1")
    typed.get("ns", "a")
    del lister.objects["ns/a"]
    assert typed.get("ns", "a") is None
    assert typed._cache == {}
    lister.objects["ns/b"] = box("b", 2, "2")
    lister.objects["ns/c"] = box("c", 2, "3")
    typed.list()
    del lister.objects["ns/b"]
    assert [b.metadata.name for b in typed.list()] == ["c"]
    assert set(typed._cache) == {"ns/c"}


def test_an_object_without_resource_version_is_validated_on_every_read(lister: FakeLister) -> None:
    typed = TypedLister(Box, lister)  # type: ignore[arg-type]
    lister.objects["ns/a"] = box("a", 2, "")
    typed.get("ns", "a")
    typed.get("ns", "a")
    assert typed.validations == 2
