"""The values the store hands out: stored entries, watch events, subscriptions, and time formatting."""

from __future__ import annotations

import asyncio
import datetime
import functools
import os
import random
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

JSON = dict[str, Any]


def copy_json(obj: JSON) -> JSON:
    copied: JSON = orjson.loads(orjson.dumps(obj))
    return copied


def format_time(t: float) -> str:
    """RFC 3339 with whole seconds and `Z`, as metav1.Time serialises."""
    return _format_second(int(t // 1))


def parse_time(stamp: str) -> float:
    """The inverse of format_time (metav1.Time, whole seconds): seconds since the epoch."""
    parsed = datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.UTC)
    return parsed.timestamp()


@functools.lru_cache(maxsize=64)  # writes come in bursts within the same second
def _format_second(second: int) -> str:
    return datetime.datetime.fromtimestamp(second, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


_uid_random = random.Random()  # seeded from the OS: uids differ between runs and processes
os.register_at_fork(after_in_child=_uid_random.seed)


def new_uid() -> str:
    """A random (version 4) UUID as text: what uuid.uuid4() gives, without a system call per object."""
    bits = _uid_random.getrandbits(128) & ~(0xF000 << 64) & ~(0xC000 << 48) | (0x4000 << 64) | (0x8000 << 48)
    text = f"{bits:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def format_micro_time(t: float) -> str:
    """RFC 3339 with exactly six fractional digits, as metav1.MicroTime serialises."""
    return datetime.datetime.fromtimestamp(t, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def split_resource(resource: str) -> tuple[str, str]:
    """ "jobs.batch" -> ("jobs", "batch"); "pods" -> ("pods", "")."""
    plural, _, group = resource.partition(".")
    return plural, group


class Entry:
    """One stored version of an object: its serialised bytes, its revision and the dict they decode to.

    The dict is decoded from the bytes on first use when the entry was built without it (entries replayed
    from the watch history or loaded from disk), so retained history costs the bytes alone."""

    __slots__ = ("_namespace", "_obj", "data", "rv")

    def __init__(self, obj: JSON | None, data: bytes, rv: int) -> None:
        self._obj = obj
        self.data = data
        self.rv = rv
        self._namespace: str | None = None

    @property
    def obj(self) -> JSON:
        obj = self._obj
        if obj is None:
            obj = self._obj = orjson.loads(self.data)
        return obj

    @property
    def namespace(self) -> str:
        # read by every namespaced watch an event reaches: worked out once (an entry is read-only)
        namespace = self._namespace
        if namespace is None:
            namespace = self._namespace = str(self.obj["metadata"].get("namespace", ""))
        return namespace

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])

    def __repr__(self) -> str:
        return f"Entry(rv={self.rv}, data={self.data[:60]!r}...)"


@dataclass(slots=True)
class WatchEvent:
    """A change: `type` is ADDED, MODIFIED or DELETED; `entry` the new state (for DELETED: the final state at
    the deletion revision); `old` the previous state (None for ADDED). `cache` holds per-view encodings."""

    type: str
    resource: str
    entry: Entry
    old: Entry | None
    cache: dict[Any, bytes] = field(default_factory=dict)

    @property
    def rv(self) -> int:
        return self.entry.rv

    @property
    def obj(self) -> JSON:
        return self.entry.obj

    def line(self, event_type: str | None = None) -> bytes:
        """The watch wire line `{"type":..,"object":..}\\n`, built from bytes serialised once."""
        etype = event_type or self.type
        cached = self.cache.get(etype)
        if cached is None:
            cached = b'{"type":"' + etype.encode() + b'","object":' + self.entry.data + b"}\n"
            self.cache[etype] = cached
        return cached


class Subscription:
    """A store subscription; `unsubscribe` is the store's, called by close()."""

    def __init__(
        self,
        unsubscribe: Callable[[Subscription], None],
        resource: str | None,
        callback: Callable[[WatchEvent], None],
    ) -> None:
        self._unsubscribe = unsubscribe
        self.resource = resource
        self.callback = callback

    def close(self) -> None:
        self._unsubscribe(self)


class StoreWatch:
    """Async iterator over a resource's events, for in-process consumers."""

    def __init__(
        self,
        subscribe: Callable[[str | None, Callable[[WatchEvent], None]], Subscription],
        resource: str | None,
    ) -> None:
        self._queue: asyncio.Queue[WatchEvent | None] = asyncio.Queue()
        self._sub = subscribe(resource, self._queue.put_nowait)

    def close(self) -> None:
        self._sub.close()
        self._queue.put_nowait(None)

    def __aiter__(self) -> AsyncIterator[WatchEvent]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[WatchEvent]:
        while (event := await self._queue.get()) is not None:
            yield event
