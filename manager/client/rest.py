"""The API client: Kubernetes verbs on raw dicts (orjson), addressed by GroupVersionResource.

The transport underneath (manager/client/transport.py) owns the session, rate limiting, retries, timeouts,
typed errors and metrics.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal, ParamSpec

import orjson

from manager.apimachinery.resources import GroupVersionResource
from manager.client.config import load_config
from manager.client.stream11 import StreamResponse
from manager.client.transport import JSON, Transport
from manager.client.unary import clean_params as _clean
from manager.client.watch import WatchStream

PatchType = Literal["merge", "strategic", "json", "apply"]
PATCH_CONTENT_TYPES: dict[str, str] = {
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "json": "application/json-patch+json",
    "apply": "application/apply-patch+yaml",
}
METADATA_LIST_ACCEPT = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
METADATA_ACCEPT = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"

P = ParamSpec("P")


def _decoded(raw: Callable[P, Awaitable[bytes]], doc: str) -> Callable[P, Awaitable[dict[str, Any]]]:
    """The decoding twin of a method that returns a JSON object's bytes: the same arguments, the dict."""

    async def decoded(*args: P.args, **kwargs: P.kwargs) -> dict[str, Any]:
        obj = orjson.loads(await raw(*args, **kwargs))
        return obj if isinstance(obj, dict) else {}

    decoded.__doc__ = doc
    return decoded


class ApiClient(Transport):
    """Async Kubernetes REST client on raw dicts: `await create_client(...)`, then `await close()`.

    Timeouts: `request_timeout` (whole request, default 30 s) for single objects, `list_timeout` for lists;
    watches use the server's `timeoutSeconds` plus a client read timeout of `watch_read_margin` on every
    socket read.
    """

    # ------------------------------------------------------------------ construction
    @classmethod
    async def from_settings(cls, settings: Any, **kwargs: Any) -> ApiClient:
        """Build from the Settings (kubeconfig, master, kube_api_qps, kube_api_burst)."""
        return await create_client(
            kubeconfig=settings.kubeconfig,
            master=settings.master,
            qps=settings.kube_api_qps,
            burst=settings.kube_api_burst,
            **kwargs,
        )

    async def __aenter__(self) -> ApiClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ------------------------------------------------------------------ verbs
    async def get(
        self,
        gvr: GroupVersionResource,
        name: str,
        namespace: str | None = None,
        *,
        subresource: str | None = None,
        metadata_only: bool = False,
    ) -> dict[str, Any]:
        """GET one object (raises NotFound)."""
        return await self.request_json(
            "GET",
            gvr.api_path(namespace, name, subresource),
            accept=METADATA_ACCEPT if metadata_only else JSON,
        )

    async def list_raw(
        self,
        gvr: GroupVersionResource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resource_version: str | None = None,
        resource_version_match: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
        metadata_only: bool = False,
        timeout: float | None = None,
    ) -> bytes:
        """LIST one page and return the undecoded body (the reflector decodes it in one go)."""
        params = _clean(
            {
                "labelSelector": label_selector,
                "fieldSelector": field_selector,
                "resourceVersion": resource_version,
                "resourceVersionMatch": resource_version_match,
                "limit": limit or None,
                "continue": continue_token,
            }
        )
        return await self.request_raw(
            "GET",
            gvr.api_path(namespace),
            params=params,
            accept=METADATA_LIST_ACCEPT if metadata_only else JSON,
            timeout=timeout or self.list_timeout,
        )

    list = _decoded(
        list_raw, "LIST one page: the List object (`items`, `metadata.resourceVersion`, `metadata.continue`)."
    )

    async def create(
        self,
        gvr: GroupVersionResource,
        body: dict[str, Any],
        namespace: str | None = None,
        *,
        field_manager: str | None = None,
        dry_run: bool = False,
        strip_managed_fields: bool = False,
        metadata_only: bool = False,
    ) -> dict[str, Any]:
        """POST a new object (namespace defaults to `body.metadata.namespace`; raises AlreadyExists).
        `strip_managed_fields` (here and on the other writes): the answer without metadata.managedFields,
        cheaper to decode, for callers that never read them. `metadata_only` (here and on the other writes):
        the answer as a PartialObjectMetadata (`Accept: ...;as=PartialObjectMetadata`, which the apiserver
        applies to every verb's result), for callers that read only its metadata (a generated name, the new
        resourceVersion); the write itself and its errors are the same."""
        ns = namespace or body.get("metadata", {}).get("namespace")
        # No query at all in the common case: no dict to build and clean per write.
        params = (
            _clean({"fieldManager": field_manager, "dryRun": "All" if dry_run else None})
            if field_manager is not None or dry_run
            else None
        )
        return await self.request_json(
            "POST",
            gvr.api_path(ns),
            params=params,
            body=body,
            accept=METADATA_ACCEPT if metadata_only else JSON,
            strip_managed_fields=strip_managed_fields,
        )

    async def update(
        self,
        gvr: GroupVersionResource,
        body: dict[str, Any],
        *,
        field_manager: str | None = None,
        subresource: str | None = None,
        strip_managed_fields: bool = False,
        metadata_only: bool = False,
    ) -> dict[str, Any]:
        """PUT the whole object (optimistic concurrency on `metadata.resourceVersion`; raises Conflict)."""
        meta = body.get("metadata", {})
        path = gvr.api_path(meta.get("namespace"), meta["name"], subresource)
        params = None if field_manager is None else _clean({"fieldManager": field_manager})
        return await self.request_json(
            "PUT",
            path,
            params=params,
            body=body,
            accept=METADATA_ACCEPT if metadata_only else JSON,
            strip_managed_fields=strip_managed_fields,
        )

    async def update_status(
        self,
        gvr: GroupVersionResource,
        body: dict[str, Any],
        *,
        field_manager: str | None = None,
        strip_managed_fields: bool = False,
        metadata_only: bool = False,
    ) -> dict[str, Any]:
        """PUT the status subresource."""
        return await self.update(
            gvr,
            body,
            field_manager=field_manager,
            subresource="status",
            strip_managed_fields=strip_managed_fields,
            metadata_only=metadata_only,
        )

    async def patch(
        self,
        gvr: GroupVersionResource,
        name: str,
        patch: object,
        namespace: str | None = None,
        *,
        patch_type: PatchType = "merge",
        field_manager: str | None = None,
        force: bool | None = None,
        subresource: str | None = None,
        strip_managed_fields: bool = False,
        metadata_only: bool = False,
    ) -> dict[str, Any]:
        """PATCH with a merge, strategic-merge, JSON (list of ops) or server-side apply patch."""
        if patch_type == "apply" and not field_manager:
            raise ValueError("server-side apply needs a field_manager")
        params = _clean({"fieldManager": field_manager, "force": force})
        return await self.request_json(
            "PATCH",
            gvr.api_path(namespace, name, subresource),
            params=params,
            body=patch,
            content_type=PATCH_CONTENT_TYPES[patch_type],
            accept=METADATA_ACCEPT if metadata_only else JSON,
            strip_managed_fields=strip_managed_fields,
        )

    async def delete(
        self,
        gvr: GroupVersionResource,
        name: str,
        namespace: str | None = None,
        *,
        propagation_policy: Literal["Foreground", "Background", "Orphan"] | None = None,
        preconditions: dict[str, str] | None = None,
        grace_period_seconds: int | None = None,
    ) -> dict[str, Any]:
        """DELETE one object; returns the server's answer (the object while finalizers run, or a Status)."""
        return await self.request_json(
            "DELETE",
            gvr.api_path(namespace, name),
            body=_delete_options(propagation_policy, preconditions, grace_period_seconds),
        )

    async def delete_collection(
        self,
        gvr: GroupVersionResource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        propagation_policy: Literal["Foreground", "Background", "Orphan"] | None = None,
        grace_period_seconds: int | None = None,
    ) -> dict[str, Any]:
        """DELETE every object of the collection matching the selectors."""
        params = _clean({"labelSelector": label_selector, "fieldSelector": field_selector})
        return await self.request_json(
            "DELETE",
            gvr.api_path(namespace),
            params=params,
            body=_delete_options(propagation_policy, None, grace_period_seconds),
            timeout=self.list_timeout,
        )

    def watch(
        self,
        gvr: GroupVersionResource,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: int = 300,
        allow_watch_bookmarks: bool = True,
        send_initial_events: bool | None = None,
        resource_version_match: str | None = None,
        metadata_only: bool = False,
        read_timeout: bool = True,
    ) -> WatchStream:
        """Open a watch (lazily: on `async with` / first iteration). Not rate-limited (informer watches).

        The server ends the stream after `timeout_seconds`; the client gives up when no byte arrives for
        `timeout_seconds + watch_read_margin` (a half-open connection would otherwise block forever).
        `read_timeout=False` leaves that to the caller, which must then detect a silent stream itself (the
        reflector's read deadline does).
        """
        params = _clean(
            {
                "watch": True,
                "resourceVersion": resource_version,
                "labelSelector": label_selector,
                "fieldSelector": field_selector,
                "timeoutSeconds": timeout_seconds,
                "allowWatchBookmarks": allow_watch_bookmarks or None,
                "sendInitialEvents": send_initial_events,
                "resourceVersionMatch": resource_version_match,
            }
        )
        idle = timeout_seconds + self.watch_read_margin if read_timeout else None

        async def opener() -> StreamResponse:
            return await self._open(
                "GET",
                gvr.api_path(namespace),
                params=params,
                read_timeout=idle,
                rate_limited=False,
                retry=False,
                accept=METADATA_ACCEPT if metadata_only else JSON,
            )

        return WatchStream(opener)


def _delete_options(
    propagation_policy: str | None, preconditions: dict[str, str] | None, grace_period_seconds: int | None
) -> dict[str, Any] | None:
    options: dict[str, Any] = {}
    if propagation_policy:
        options["propagationPolicy"] = propagation_policy
    if preconditions:
        options["preconditions"] = preconditions
    if grace_period_seconds is not None:
        options["gracePeriodSeconds"] = grace_period_seconds
    if not options:
        return None
    return {"kind": "DeleteOptions", "apiVersion": "v1", **options}


async def create_client(
    kubeconfig: str | None = None,
    master: str | None = None,
    *,
    qps: float = 20.0,
    burst: int = 30,
    context: str | None = None,
    **kwargs: Any,
) -> ApiClient:
    """Load the configuration (kubeconfig / master / in-cluster) and return a ready `ApiClient`."""
    config = await load_config(kubeconfig=kubeconfig, master=master, context=context)
    return ApiClient(config, qps=qps, burst=burst, **kwargs)
