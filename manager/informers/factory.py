"""InformerFactory: one SharedInformer per (resource, namespace, selectors, metadata-only, transform) for the
process."""

from __future__ import annotations

import asyncio
from typing import Any, Unpack, cast

from manager.apimachinery.resources import GroupVersionResource, ObjT
from manager.client.rest import ApiClient
from manager.informers.backoff import Backoff
from manager.informers.informer import Selectors, SharedInformer, informer_name
from manager.informers.transform import Transform, chain, project_metadata
from manager.informers.wakeup import RetrySignal

InformerKey = tuple[GroupVersionResource, str | None, str | None, str | None, bool, Transform | None]


class InformerFactory:
    """Hands out shared informers; every controller asking for the same thing gets the same informer.

    `start()` is idempotent and also starts informers requested later (a late controller's informer starts
    as soon as it is asked for once the factory runs). `options` are passed to every SharedInformer
    (e.g. `use_watch_list`, `stale_after`, `failure_grace`, `backoff`, `min_watch_timeout`, `deadline`).
    Every reflector shares the factory's `wakeup`: `retry_now()` ends their backoff waits.
    """

    def __init__(self, client: ApiClient, *, transform: Transform | None = None, **options: Any) -> None:
        self.client = client
        self.transform = transform
        self.wakeup: RetrySignal = options.pop("wakeup", None) or RetrySignal()
        self.options = options
        self._informers: dict[InformerKey, SharedInformer[Any]] = {}
        self._monitors: set[InformerKey] = set()  # made by monitor(): not in readiness, may be discarded
        self._started = False
        # Bumped whenever an informer is forgotten (`discard`): callers caching what `informer()` returned
        # (Controller.informer) look again.
        self.generation = 0

    def informer(
        self,
        gvr: GroupVersionResource[ObjT],
        *,
        transform: Transform | None = None,
        **selectors: Unpack[Selectors],
    ) -> SharedInformer[ObjT]:
        """The shared informer for these arguments. `transform` (compared by identity: pass the same function
        to share) replaces the factory's transform, i.e. the default managedFields stripping — compose with
        `chain(strip_managed_fields, yours)` to keep it; metadata-only informers project first, then run it.
        """
        metadata_only = selectors.get("metadata_only", False)
        key: InformerKey = (
            gvr,
            selectors.get("namespace") or None,
            selectors.get("label_selector") or None,
            selectors.get("field_selector") or None,
            metadata_only,
            transform,
        )
        informer = self._informers.get(key)
        if informer is None:
            options = dict(self.options, wakeup=self.wakeup)
            template = options.get("backoff")
            if isinstance(template, Backoff):  # each informer backs off on its own
                options["backoff"] = template.copy()
            if transform is not None and "name" not in options:  # its own metrics labels
                base = informer_name(gvr, key[1], key[2], key[3], metadata_only)
                tag = f"transform={getattr(transform, '__qualname__', type(transform).__name__)}"
                options["name"] = f"{base[:-1]},{tag}]" if base.endswith("]") else f"{base}[{tag}]"
            informer = SharedInformer(
                self.client,
                gvr,
                namespace=key[1],
                label_selector=key[2],
                field_selector=key[3],
                metadata_only=metadata_only,
                transform=self._transform_for(metadata_only, transform),
                **options,
            )
            self._informers[key] = informer
            if self._started:
                informer.start()
        # Keyed by the resource's fields, not its type parameter: every reader shares one informer and sees
        # the objects as the type of the resource it asked with.
        return cast("SharedInformer[ObjT]", informer)

    def monitor(self, gvr: GroupVersionResource) -> SharedInformer[Any]:
        """For controllers that watch whatever discovery lists (the garbage collector): the process's
        informer of all of `gvr` with no selectors if one exists, whatever it caches (so the resource is
        still watched once), else a new metadata-only one.

        An informer made here is left out of `readiness_check` and of nobody's start-up wait: a custom
        resource whose list fails must not make the manager unready. `discard` stops it."""
        for key, informer in self._informers.items():
            if key[0] == gvr and key[1:4] == (None, None, None) and key[5] in (None, self.transform):
                return informer
        informer = self.informer(gvr, metadata_only=True)
        self._monitors.add(self._key_of(informer))
        return informer

    async def discard(self, informer: SharedInformer[Any]) -> bool:
        """Stop and forget an informer `monitor` made, once it has no handler left (its resource is no
        longer served). Informers other controllers asked for are kept; returns whether it was stopped."""
        key = self._key_of(informer)
        if key not in self._monitors or informer.handler_count():
            return False
        self._monitors.discard(key)
        del self._informers[key]
        self.generation += 1
        await informer.stop()
        return True

    def _key_of(self, informer: SharedInformer[Any]) -> InformerKey:
        return next(key for key, known in self._informers.items() if known is informer)

    def _transform_for(self, metadata_only: bool, transform: Transform | None) -> Transform | None:
        if metadata_only:
            return chain(project_metadata, transform) if transform else None
        return transform or self.transform

    def informers(self) -> list[SharedInformer[Any]]:
        return list(self._informers.values())

    def start(self) -> None:
        """Start every informer requested so far (and, from now on, each new one). Idempotent."""
        self._started = True
        for informer in self._informers.values():
            informer.start()

    def retry_now(self) -> None:
        """The API server answers again: every reflector waiting out a backoff retries at once."""
        self.wakeup.wake()

    def has_synced(self) -> bool:
        return all(informer.has_synced() for informer in self._informers.values())

    async def wait_for_cache_sync(self, timeout: float | None = None) -> bool:
        """Wait until every informer requested so far has synced; False on timeout."""
        # One informer after another under one deadline: no gather, so cancelling this (a shutdown during
        # start-up) leaves no child future whose exception nobody retrieves.
        try:
            async with asyncio.timeout(timeout):
                for informer in list(self._informers.values()):
                    await informer.wait_for_cache_sync()
        except TimeoutError:
            return False
        return True

    async def shutdown(self) -> None:
        """Stop every informer and wait for their tasks to end."""
        self._started = False
        await asyncio.gather(*(informer.stop() for informer in self._informers.values()))

    def readiness_check(self) -> str | None:
        """HealthChecks-compatible: None when every informer is synced and live, else the reasons."""
        problems = [
            problem
            for key, informer in self._informers.items()
            if key not in self._monitors and (problem := informer.health())
        ]
        return "; ".join(problems) if problems else None
