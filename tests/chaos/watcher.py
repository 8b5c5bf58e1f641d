"""The test's own view of the cluster: list, then watch, one stream per resource, surviving every fault.

A stream that ends is resumed from its last resourceVersion; a 410 (compacted history) or any other failure
relists, which replaces the state (events in the gap are not seen; the invariants are checked against the
list instead). A paused or restarting server is waited out by retrying.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import orjson

Obj = dict[str, Any]
OnEvent = Callable[[str, Obj], None]  # (ADDED | MODIFIED | DELETED, object)
OnList = Callable[[list[Obj], int], None]  # (objects, the list's resourceVersion)
USER_AGENT = "aiokcm-chaos-test"
RETRY_SECONDS = 0.2


class Relist(Exception):
    """The stream cannot be resumed: list again."""


@dataclass
class ResourceWatch:
    session: aiohttp.ClientSession
    url: str  # the collection URL: http://host:port/apis/batch/v1/namespaces/chaos/jobs
    on_event: OnEvent
    on_list: OnList
    relists: int = 0
    resumes: int = 0
    rv: str = ""
    errors: list[str] = field(default_factory=list)

    async def run(self) -> None:
        while True:
            try:
                if not self.rv:
                    await self._list()
                await self._watch()
                self.resumes += 1
            except Relist:
                self.rv, self.relists = "", self.relists + 1
            except (TimeoutError, aiohttp.ClientError, OSError) as exc:
                # a paused or restarting server: resume if we can, the next failure will relist
                self.errors.append(f"{time.time():.1f} {type(exc).__name__}: {exc}")
                await asyncio.sleep(RETRY_SECONDS)

    async def _list(self) -> None:
        async with self.session.get(self.url, timeout=aiohttp.ClientTimeout(total=10)) as resp:
            if resp.status != 200:
                raise Relist()
            body = orjson.loads(await resp.read())
        self.rv = body["metadata"]["resourceVersion"]
        self.on_list(body["items"], int(self.rv))

    async def _watch(self) -> None:
        params = {"watch": "true", "resourceVersion": self.rv, "allowWatchBookmarks": "true"}
        # no total timeout: a watch is long; a read idle for longer than a paused server is suspicious
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=5, sock_read=30)
        async with self.session.get(self.url, params=params, timeout=timeout) as resp:
            if resp.status != 200:
                raise Relist()
            async for line in resp.content:
                if line.strip():
                    self._event(orjson.loads(line))

    def _event(self, event: Obj) -> None:
        kind, obj = event["type"], event["object"]
        if kind == "ERROR":
            raise Relist()  # 410 Expired above all
        self.rv = obj["metadata"]["resourceVersion"]
        if kind != "BOOKMARK":
            self.on_event(kind, obj)


async def watch_all(watches: list[ResourceWatch]) -> list[asyncio.Task[None]]:
    return [asyncio.create_task(w.run(), name=f"watch {w.url}") for w in watches]


def session() -> aiohttp.ClientSession:
    return aiohttp.ClientSession(headers={"User-Agent": USER_AGENT, "Accept": "application/json"})
