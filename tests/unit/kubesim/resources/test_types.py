"""ResourceType's derived names: computed once, and no part of equality or hashing."""

from __future__ import annotations

import dataclasses

from kubesim.resources.types import ResourceType


def test_key_and_api_version_are_remembered_outside_equality() -> None:
    events = ResourceType("events.k8s.io", "v1", "events", "Event", store_group="")
    twin = ResourceType("events.k8s.io", "v1", "events", "Event", store_group="")
    assert (events.key, events.api_version) == ("events", "events.k8s.io/v1")  # stored with core events
    assert events == twin and hash(events) == hash(twin)  # one has its names computed, the other not
    moved = dataclasses.replace(events, store_group=None, version="v2")
    assert (moved.key, moved.api_version) == ("events.events.k8s.io", "events.k8s.io/v2")
    core = ResourceType("", "v1", "configmaps", "ConfigMap")
    assert (core.key, core.api_version) == ("configmaps", "v1")
