"""aiokcm: a kube-controller-manager-style daemon on one asyncio loop.

This module is the public API controllers use (built-in and third-party alike); everything else in
`manager` is the manager's own machinery and may change.

The names are loaded on first use (PEP 562): ``aiokcm --help`` or ``--version`` then starts without importing
aiohttp, prometheus_client or kubernetes-asyncio, and a controller pays only for what it touches.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from manager.apimachinery.conditions import (
        find_status_condition,
        is_status_condition_false,
        is_status_condition_present_and_equal,
        is_status_condition_true,
        remove_status_condition,
        set_status_condition,
    )
    from manager.apimachinery.customresource import (
        CustomResource,
        ObjectMeta,
        PrinterColumn,
        SchemaError,
    )
    from manager.apimachinery.customresource import (
        crd as custom_resource_definition,
    )
    from manager.apimachinery.finalizers import (
        add_finalizer,
        contains_finalizer,
        remove_finalizer,
    )
    from manager.apimachinery.metatime import (
        format_time,
    )
    from manager.apimachinery.objects import (
        controller_owner,
        object_key,
    )
    from manager.apimachinery.ownership import (
        AlreadyOwnedError,
        OwnerReferenceError,
        set_controller_reference,
        set_owner_reference,
    )
    from manager.apimachinery.resources import (
        CONFIGMAPS,
        CRONJOBS,
        CUSTOMRESOURCEDEFINITIONS,
        DEPLOYMENTS,
        EVENTS,
        JOBS,
        LEASES,
        NAMESPACES,
        NODES,
        PODS,
        REPLICASETS,
        GroupVersionResource,
    )
    from manager.client.discovery import (
        ApiResource,
        Discovery,
        ResourceNotFound,
        discover_resources,
    )
    from manager.client.discovery import (
        resolve as resolve_resource,
    )
    from manager.client.errors import (
        AlreadyExists,
        ApiError,
        BadRequest,
        Conflict,
        Expired,
        Forbidden,
        Invalid,
        NotFound,
        ServerError,
        TooManyRequests,
    )
    from manager.client.rest import (
        ApiClient,
    )
    from manager.client.toolkit import (
        patch_finalizers,
        patch_status,
    )
    from manager.config.settings import ControllerFlags, Duration
    from manager.controller.base import (
        Controller,
        ControllerContext,
        PolicyRule,
        SecondaryQueue,
    )
    from manager.controller.expectations import (
        ControllerExpectations,
    )
    from manager.controller.reconcile import (
        Request,
        Result,
        TerminalError,
    )
    from manager.controller.typed import (
        InvalidObject,
        TypedLister,
    )
    from manager.controller.watches import (
        For,
        Owns,
        Watch,
        Watches,
        WatchesWith,
    )
    from manager.events import (
        EventRecorder,
    )
    from manager.informers import (
        CONTROLLER_UID_INDEX,
        NAMESPACE_INDEX,
        DeletedFinalStateUnknown,
        EventHandler,
        EventHandlerFuncs,
        HandlerRegistration,
        Indexer,
        InformerFactory,
        Lister,
        SharedInformer,
        controller_uid_index,
        final_object,
        orphan_index_key,
    )
    from manager.metrics.families import (
        CounterSeries,
        ScrapeTimeCollector,
        ScrapeTimeCounter,
        ScrapeTimeHistogram,
    )
    from manager.metrics.fasthistogram import (
        FastHistogram,
    )
    from manager.workqueue import (
        BucketRateLimiter,
        DelayingQueue,
        ItemExponentialFailureRateLimiter,
        ItemFastSlowRateLimiter,
        MaxOfRateLimiter,
        Queue,
        QueueShutDown,
        RateLimiter,
        RateLimitingQueue,
        default_controller_rate_limiter,
        default_item_based_rate_limiter,
    )

_EXPORTS: dict[str, str] = {
    "CustomResource": "manager.apimachinery.customresource",
    "ObjectMeta": "manager.apimachinery.customresource",
    "PrinterColumn": "manager.apimachinery.customresource",
    "SchemaError": "manager.apimachinery.customresource",
    "InvalidObject": "manager.controller.typed",
    "TypedLister": "manager.controller.typed",
    "custom_resource_definition": "manager.apimachinery.customresource",
    "find_status_condition": "manager.apimachinery.conditions",
    "is_status_condition_false": "manager.apimachinery.conditions",
    "is_status_condition_present_and_equal": "manager.apimachinery.conditions",
    "is_status_condition_true": "manager.apimachinery.conditions",
    "remove_status_condition": "manager.apimachinery.conditions",
    "set_status_condition": "manager.apimachinery.conditions",
    "add_finalizer": "manager.apimachinery.finalizers",
    "contains_finalizer": "manager.apimachinery.finalizers",
    "remove_finalizer": "manager.apimachinery.finalizers",
    "AlreadyOwnedError": "manager.apimachinery.ownership",
    "OwnerReferenceError": "manager.apimachinery.ownership",
    "set_controller_reference": "manager.apimachinery.ownership",
    "set_owner_reference": "manager.apimachinery.ownership",
    "patch_finalizers": "manager.client.toolkit",
    "patch_status": "manager.client.toolkit",
    "ResourceNotFound": "manager.client.discovery",
    "resolve_resource": "manager.client.discovery",
    "ControllerFlags": "manager.config.settings",
    "Duration": "manager.config.settings",
    "format_time": "manager.apimachinery.metatime",
    "controller_owner": "manager.apimachinery.objects",
    "object_key": "manager.apimachinery.objects",
    "CONFIGMAPS": "manager.apimachinery.resources",
    "CRONJOBS": "manager.apimachinery.resources",
    "CUSTOMRESOURCEDEFINITIONS": "manager.apimachinery.resources",
    "DEPLOYMENTS": "manager.apimachinery.resources",
    "EVENTS": "manager.apimachinery.resources",
    "JOBS": "manager.apimachinery.resources",
    "LEASES": "manager.apimachinery.resources",
    "NAMESPACES": "manager.apimachinery.resources",
    "NODES": "manager.apimachinery.resources",
    "PODS": "manager.apimachinery.resources",
    "REPLICASETS": "manager.apimachinery.resources",
    "GroupVersionResource": "manager.apimachinery.resources",
    "ApiResource": "manager.client.discovery",
    "Discovery": "manager.client.discovery",
    "discover_resources": "manager.client.discovery",
    "AlreadyExists": "manager.client.errors",
    "ApiError": "manager.client.errors",
    "BadRequest": "manager.client.errors",
    "Conflict": "manager.client.errors",
    "Expired": "manager.client.errors",
    "Forbidden": "manager.client.errors",
    "Invalid": "manager.client.errors",
    "NotFound": "manager.client.errors",
    "ServerError": "manager.client.errors",
    "TooManyRequests": "manager.client.errors",
    "ApiClient": "manager.client.rest",
    "Controller": "manager.controller.base",
    "ControllerContext": "manager.controller.base",
    "PolicyRule": "manager.controller.base",
    "SecondaryQueue": "manager.controller.base",
    "ControllerExpectations": "manager.controller.expectations",
    "Request": "manager.controller.reconcile",
    "Result": "manager.controller.reconcile",
    "TerminalError": "manager.controller.reconcile",
    "For": "manager.controller.watches",
    "Owns": "manager.controller.watches",
    "Watch": "manager.controller.watches",
    "Watches": "manager.controller.watches",
    "WatchesWith": "manager.controller.watches",
    "EventRecorder": "manager.events",
    "CONTROLLER_UID_INDEX": "manager.informers",
    "NAMESPACE_INDEX": "manager.informers",
    "DeletedFinalStateUnknown": "manager.informers",
    "EventHandler": "manager.informers",
    "EventHandlerFuncs": "manager.informers",
    "HandlerRegistration": "manager.informers",
    "Indexer": "manager.informers",
    "InformerFactory": "manager.informers",
    "Lister": "manager.informers",
    "SharedInformer": "manager.informers",
    "controller_uid_index": "manager.informers",
    "final_object": "manager.informers",
    "orphan_index_key": "manager.informers",
    "BucketRateLimiter": "manager.workqueue",
    "DelayingQueue": "manager.workqueue",
    "ItemExponentialFailureRateLimiter": "manager.workqueue",
    "ItemFastSlowRateLimiter": "manager.workqueue",
    "MaxOfRateLimiter": "manager.workqueue",
    "Queue": "manager.workqueue",
    "QueueShutDown": "manager.workqueue",
    "RateLimiter": "manager.workqueue",
    "RateLimitingQueue": "manager.workqueue",
    "default_controller_rate_limiter": "manager.workqueue",
    "default_item_based_rate_limiter": "manager.workqueue",
    "CounterSeries": "manager.metrics.families",
    "ScrapeTimeCollector": "manager.metrics.families",
    "ScrapeTimeCounter": "manager.metrics.families",
    "ScrapeTimeHistogram": "manager.metrics.families",
    "FastHistogram": "manager.metrics.fasthistogram",
}

# Public names that differ from the name in their module.
_ALIASES: dict[str, str] = {"resolve_resource": "resolve", "custom_resource_definition": "crd"}

__all__ = [
    "CONFIGMAPS",
    "CONTROLLER_UID_INDEX",
    "CRONJOBS",
    "CUSTOMRESOURCEDEFINITIONS",
    "DEPLOYMENTS",
    "EVENTS",
    "JOBS",
    "LEASES",
    "NAMESPACES",
    "NAMESPACE_INDEX",
    "NODES",
    "PODS",
    "REPLICASETS",
    "AlreadyExists",
    "AlreadyOwnedError",
    "ApiClient",
    "ApiError",
    "ApiResource",
    "BadRequest",
    "BucketRateLimiter",
    "Conflict",
    "Controller",
    "ControllerContext",
    "ControllerExpectations",
    "ControllerFlags",
    "CounterSeries",
    "CustomResource",
    "DelayingQueue",
    "DeletedFinalStateUnknown",
    "Discovery",
    "Duration",
    "EventHandler",
    "EventHandlerFuncs",
    "EventRecorder",
    "Expired",
    "FastHistogram",
    "For",
    "Forbidden",
    "GroupVersionResource",
    "HandlerRegistration",
    "Indexer",
    "InformerFactory",
    "Invalid",
    "InvalidObject",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "Lister",
    "MaxOfRateLimiter",
    "NotFound",
    "ObjectMeta",
    "OwnerReferenceError",
    "Owns",
    "PolicyRule",
    "PrinterColumn",
    "Queue",
    "QueueShutDown",
    "RateLimiter",
    "RateLimitingQueue",
    "Request",
    "ResourceNotFound",
    "Result",
    "SchemaError",
    "ScrapeTimeCollector",
    "ScrapeTimeCounter",
    "ScrapeTimeHistogram",
    "SecondaryQueue",
    "ServerError",
    "SharedInformer",
    "TerminalError",
    "TooManyRequests",
    "TypedLister",
    "Watch",
    "Watches",
    "WatchesWith",
    "add_finalizer",
    "contains_finalizer",
    "controller_owner",
    "controller_uid_index",
    "custom_resource_definition",
    "default_controller_rate_limiter",
    "default_item_based_rate_limiter",
    "discover_resources",
    "final_object",
    "find_status_condition",
    "format_time",
    "is_status_condition_false",
    "is_status_condition_present_and_equal",
    "is_status_condition_true",
    "object_key",
    "orphan_index_key",
    "patch_finalizers",
    "patch_status",
    "remove_finalizer",
    "remove_status_condition",
    "resolve_resource",
    "set_controller_reference",
    "set_owner_reference",
    "set_status_condition",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'manager' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), _ALIASES.get(name, name))
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
