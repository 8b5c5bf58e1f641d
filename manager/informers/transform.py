"""Ingest transforms: run once per object before it enters the cache. They may mutate in place and must be
idempotent (client-go's TransformFunc contract); they must be fast — they run for every watch event."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Obj = dict[str, Any]
Transform = Callable[[Obj], Obj]


def strip_managed_fields(obj: Obj) -> Obj:
    """Drop `metadata.managedFields`: a large part of a pod's bytes and of its cached memory."""
    obj["metadata"].pop("managedFields", None)
    return obj


def project_metadata(obj: Obj) -> Obj:
    """PartialObjectMetadata: apiVersion/kind/metadata only (what the server returns for a metadata-only
    request; done here too for servers that ignore the `as=PartialObjectMetadata` Accept header)."""
    meta = obj["metadata"]
    meta.pop("managedFields", None)
    if obj.get("kind") == "PartialObjectMetadata" and len(obj) <= 3:
        return obj
    return {"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": meta}


class Chain:
    """Transforms applied in order: what `chain()` returns."""

    def __init__(self, transforms: tuple[Transform, ...]) -> None:
        self.transforms = transforms

    def __call__(self, obj: Obj) -> Obj:
        for transform in self.transforms:
            obj = transform(obj)
        return obj


def chain(*transforms: Transform) -> Transform:
    """Apply transforms in order (e.g. `chain(strip_managed_fields, drop_status)`)."""
    return Chain(transforms)


def drops_managed_fields(transform: Transform) -> bool:
    """Whether `transform` certainly discards `metadata.managedFields` before anything else sees them.

    Then the reflector may skip decoding them (manager.client.managedfields). Only the built-in stripping
    transforms, and chains that start with one, count: any other transform may want managedFields.
    """
    if isinstance(transform, Chain):
        return bool(transform.transforms) and drops_managed_fields(transform.transforms[0])
    return transform is strip_managed_fields or transform is project_metadata
