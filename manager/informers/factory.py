"""InformerFactory: one SharedInformer per (resource, namespace, selectors, metadata-only) for the process."""

from __future__ import annotations

import asyncio
from typing import Any

from manager.client.rest import ApiClient
from manager.informers.backoff import Backoff
from manager.informers.informer import SharedInformer
from manager.informers.transform import Transform
from manager.resources import GroupVersionResource

InformerKey = tuple[GroupVersionResource, str | None, str | None, str | None, bool]


class InformerFactory:
    """Hands out shared informers; every controller asking for the same thing gets the same informer.

    `start()` is idempotent and also starts informers requested later (a late controller's informer starts
    as soon as it is asked for once the factory runs). `options` are passed to every SharedInformer
    (e.g. `use_watch_list`, `stale_after`, `failure_grace`, `backoff`, `min_watch_timeout`).
    """

    def __init__(self, client: ApiClient, *, transform: Transform | None = None, **options: Any) -> None:
        self.client = client
        self.transform = transform
        self.options = options
        self._informers: dict[InformerKey, SharedInformer] = {}
        self._started = False

    def informer(
        self,
        gvr: GroupVersionResource,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        metadata_only: bool = False,
    ) -> SharedInformer:
        key: InformerKey = (
            gvr,
            namespace or None,
            label_selector or None,
            field_selector or None,
            metadata_only,
        )
        informer = self._informers.get(key)
        if informer is None:
            options = dict(self.options)
            template = options.get("backoff")
            if isinstance(template, Backoff):  # each informer backs off on its own
                options["backoff"] = template.copy()
            informer = SharedInformer(
                self.client,
                gvr,
                namespace=key[1],
                label_selector=key[2],
                field_selector=key[3],
                metadata_only=metadata_only,
                transform=None if metadata_only else self.transform,
                **options,
            )
            self._informers[key] = informer
            if self._started:
                informer.start()
        return informer

    def informers(self) -> list[SharedInformer]:
        return list(self._informers.values())

    def start(self) -> None:
        """Start every informer requested so far (and, from now on, each new one). Idempotent."""
        self._started = True
        for informer in self._informers.values():
            informer.start()

    def has_synced(self) -> bool:
        return all(informer.has_synced() for informer in self._informers.values())

    async def wait_for_cache_sync(self, timeout: float | None = None) -> bool:
        """Wait until every informer requested so far has synced; False on timeout."""
        informers = list(self._informers.values())
        try:
            await asyncio.wait_for(
                asyncio.gather(*(informer.wait_for_cache_sync() for informer in informers)), timeout
            )
        except TimeoutError:
            return False
        return True

    async def shutdown(self) -> None:
        """Stop every informer and wait for their tasks to end."""
        self._started = False
        await asyncio.gather(*(informer.stop() for informer in self._informers.values()))

    def readiness_check(self) -> str | None:
        """HealthChecks-compatible: None when every informer is synced and live, else the reasons."""
        problems = [p for p in (informer.health() for informer in self._informers.values()) if p]
        return "; ".join(problems) if problems else None
