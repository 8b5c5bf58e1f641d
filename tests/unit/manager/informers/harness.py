"""Helpers of the informer unit tests (no tests here): pods, a handler that records what it sees, and a watch
stream served from bytes in memory, read in chunks of a chosen size."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from manager.client.watch import WatchStream
from manager.informers import DeletedFinalStateUnknown


def pod(name: str, rv: str = "1", ns: str = "default", **extra: Any) -> dict[str, Any]:
    meta = {"name": name, "namespace": ns, "resourceVersion": rv, "managedFields": [{"manager": "x"}]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"nodeName": "n1"}, **extra}


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []

    def on_add(self, obj: dict[str, Any], is_in_initial_list: bool) -> None:
        self.events.append(("add", obj["metadata"]["name"], is_in_initial_list))

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.events.append(
            (
                "update",
                new["metadata"]["name"],
                old["metadata"]["resourceVersion"],
                new["metadata"]["resourceVersion"],
            )
        )

    def on_delete(self, obj: dict[str, Any] | DeletedFinalStateUnknown) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):
            self.events.append(("tombstone", obj.key, obj.obj["metadata"]["resourceVersion"]))
        else:
            self.events.append(("delete", obj["metadata"]["name"]))


class _Content:
    """Like aiohttp's StreamReader: each `iter_any()` continues where the previous reader stopped."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = list(chunks)

    async def iter_any(self) -> AsyncIterator[bytes]:
        while self.chunks:
            yield self.chunks.pop(0)


class _Response:
    def __init__(self, chunks: list[bytes]) -> None:
        self.content = _Content(chunks)

    def close(self) -> None:
        pass


def watch_stream(blob: bytes, size: int) -> WatchStream:
    async def opener() -> _Response:
        return _Response([blob[i : i + size] for i in range(0, len(blob), size)])

    return WatchStream(opener)
