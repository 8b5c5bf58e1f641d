"""The streaming list for the reflector: a watch with sendInitialEvents (client-go's WatchList, KEP-3157).

The server sends every current object as ADDED, then a bookmark annotated `k8s.io/initial-events-end`
whose resourceVersion is the list's. A server that ignores sendInitialEvents never sends that bookmark,
so the collection fails when no ADDED arrives for `timeout` seconds; the reflector then falls back to a
plain list and does not try again with that client.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable
from typing import Any

from manager.client.errors import error_from_status
from manager.client.rest import ApiClient
from manager.client.watch import Span, WatchEvent, WatchStream
from manager.informers.gcpolicy import GC_POLICY

Obj = dict[str, Any]
INITIAL_EVENTS_END = "k8s.io/initial-events-end"

# Clients whose server did not complete a streaming list: do not try again (the fallback is a plain list).
_unsupported: weakref.WeakSet[ApiClient] = weakref.WeakSet()


class WatchListFailed(Exception):
    """The stream was not a streaming list (ended early, or sent something other than ADDED first)."""


def watch_list_supported(client: ApiClient) -> bool:
    return client not in _unsupported


def mark_watch_list_unsupported(client: ApiClient) -> None:
    _unsupported.add(client)


async def collect_initial_events(
    stream: WatchStream, decode: Callable[[Span], WatchEvent | None], timeout: float
) -> tuple[list[Obj], str]:
    """The initial ADDED objects and the list's resourceVersion (from the end bookmark).

    Raises TimeoutError when no ADDED arrives for `timeout` seconds, WatchListFailed when the stream ends
    or sends another event type first, ApiError for an ERROR event. Lines after the end bookmark are given
    back to the stream (`unread`): they are the first watch events.
    """
    loop = asyncio.get_running_loop()
    items: list[Obj] = []
    paused = GC_POLICY.paused
    end_rv: str | None = None
    async with asyncio.timeout(timeout) as deadline:
        async for spans in stream.spans():
            before = len(items)
            with paused():
                for index, span in enumerate(spans):
                    event = decode(span)
                    if event is not None:
                        end_rv = _initial_event(items, *event)
                        if end_rv is not None:
                            stream.unread(spans[index + 1 :])
                            break
            if end_rv is not None:
                break
            if len(items) > before:  # progress; plain bookmarks do not count
                GC_POLICY.ingested(len(items) - before)
                deadline.reschedule(loop.time() + timeout)
    if end_rv is None:
        raise WatchListFailed("stream ended before the initial-events-end bookmark")
    return items, end_rv


def _initial_event(items: list[Obj], event_type: str, obj: Obj) -> str | None:
    """Collect one initial event; return the list's resourceVersion at the end bookmark."""
    if event_type == "ADDED":
        items.append(obj)
    elif event_type == "BOOKMARK":
        meta = obj.get("metadata") or {}
        if (meta.get("annotations") or {}).get(INITIAL_EVENTS_END) == "true":
            return str(meta.get("resourceVersion") or "")
    elif event_type == "ERROR":
        raise error_from_status(obj)
    else:
        raise WatchListFailed(f"unexpected {event_type} before the end of the initial events")
    return None
