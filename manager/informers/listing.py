"""Paged LIST for the reflector: client-go's pager and the reflector's choice of page size.

- pages of 500 for consistent reads (resourceVersion "") and once a resourceVersion "0" list came back
  paginated (the server has no watch cache: keep paging from then on); otherwise no limit, so the watch
  cache serves the whole list at once without a thundering herd on etcd;
- a continue token that expires mid-way (410) is answered with one unpaged list at the same
  resourceVersion, as client-go's pager falls back to a full list;
- each page is decoded in one `orjson.loads` with the collector paused, and the decoded items are frozen
  in batches (see gcpolicy): a 100,000-object list never has the collector walk what it just built;
- with `strip_managed_fields` the items' metadata.managedFields are cut from the bytes before decoding
  (`manager.client.managedfields_list`): faster, and no freed garbage left between the cached objects.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from manager.client.errors import ApiError, is_expired
from manager.client.managedfields_list import decode_list_stripped
from manager.informers.gcpolicy import GC_POLICY

Obj = dict[str, Any]
PAGE_SIZE = 500


# One LIST request (resourceVersion, limit, continue token), answered with the undecoded body.
FetchPage = Callable[[str | None, int | None, str | None], Awaitable[bytes]]


class Pager:
    """Lists every item at a resourceVersion, page by page; remembers whether the server paginates."""

    def __init__(
        self,
        fetch: FetchPage,
        page_size: int | None = None,
        on_expired: Callable[[], None] = lambda: None,
        *,
        strip_managed_fields: bool = False,
    ) -> None:
        self.fetch = fetch
        # The caller drops the items' metadata.managedFields: decode the pages without them (same result).
        self.decode: Callable[[bytes], Any] = decode_list_stripped if strip_managed_fields else orjson.loads
        self.page_size = page_size
        self.on_expired = on_expired  # a continue token expired (counted by the reflector)
        self.paginated_result = False

    def page_limit(self, resource_version: str) -> int | None:
        if self.page_size:
            return self.page_size
        if self.paginated_result:
            return PAGE_SIZE
        if resource_version not in ("", "0"):
            return None  # let the watch cache serve it, no thundering herd on etcd
        return PAGE_SIZE

    async def list_all(self, resource_version: str) -> tuple[list[Obj], str]:
        """All items and the list's resourceVersion. Raises ApiError (a 410 on the first page included)."""
        limit = self.page_limit(resource_version)
        items: list[Obj] = []
        continue_token: str | None = None
        first = True
        list_rv = ""
        while True:
            try:
                raw = await self.fetch(resource_version if first else None, limit, continue_token)
            except ApiError as exc:
                if is_expired(exc) and not first:
                    # The continue token expired mid-way: take one full list at the same RV instead.
                    self.on_expired()
                    return await self._list_unpaged(resource_version)
                raise
            with GC_POLICY.paused():
                page = self.decode(raw)
            page_items = page.get("items") or []
            GC_POLICY.ingested(len(page_items))  # freeze the decoded pages before GC walks them again
            meta = page.get("metadata") or {}
            items.extend(page_items)
            list_rv = meta.get("resourceVersion") or list_rv
            continue_token = meta.get("continue") or None
            if first and resource_version == "0" and continue_token:
                self.paginated_result = True  # the watch cache is off: keep paging from now on
            first = False
            if not continue_token:
                return items, list_rv

    async def _list_unpaged(self, resource_version: str) -> tuple[list[Obj], str]:
        raw = await self.fetch(resource_version, None, None)
        with GC_POLICY.paused():
            page = self.decode(raw)
        return page.get("items") or [], (page.get("metadata") or {}).get("resourceVersion", "")
