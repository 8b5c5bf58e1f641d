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
    from manager.client.rest import ApiClient
    from manager.controller import (
        Controller,
        ControllerContext,
        PolicyRule,
        Request,
        Result,
        SecondaryQueue,
        TerminalError,
        Watch,
        for_,
        owns,
        watches,
    )
    from manager.events import EventRecorder
    from manager.expectations import ControllerExpectations
    from manager.handlers import EventHandler, controller_owner, unwrap_tombstone
    from manager.informers import (
        CONTROLLER_OWNER_UID_INDEX,
        NAMESPACE_INDEX,
        DeletedFinalStateUnknown,
        EventHandlerFuncs,
        HandlerRegistration,
        Indexer,
        InformerFactory,
        SharedInformer,
        final_object,
    )
    from manager.metatime import format_time
    from manager.resources import (
        CONFIGMAPS,
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
    "Controller": "manager.controller",
    "ControllerContext": "manager.controller",
    "PolicyRule": "manager.controller",
    "Request": "manager.controller",
    "Result": "manager.controller",
    "SecondaryQueue": "manager.controller",
    "TerminalError": "manager.controller",
    "Watch": "manager.controller",
    "for_": "manager.controller",
    "owns": "manager.controller",
    "watches": "manager.controller",
    "EventRecorder": "manager.events",
    "ControllerExpectations": "manager.expectations",
    "EventHandler": "manager.handlers",
    "controller_owner": "manager.handlers",
    "unwrap_tombstone": "manager.handlers",
    "CONTROLLER_OWNER_UID_INDEX": "manager.informers",
    "NAMESPACE_INDEX": "manager.informers",
    "DeletedFinalStateUnknown": "manager.informers",
    "EventHandlerFuncs": "manager.informers",
    "HandlerRegistration": "manager.informers",
    "Indexer": "manager.informers",
    "InformerFactory": "manager.informers",
    "SharedInformer": "manager.informers",
    "final_object": "manager.informers",
    "format_time": "manager.metatime",
    "CONFIGMAPS": "manager.resources",
    "CUSTOMRESOURCEDEFINITIONS": "manager.resources",
    "DEPLOYMENTS": "manager.resources",
    "EVENTS": "manager.resources",
    "JOBS": "manager.resources",
    "LEASES": "manager.resources",
    "NAMESPACES": "manager.resources",
    "NODES": "manager.resources",
    "PODS": "manager.resources",
    "REPLICASETS": "manager.resources",
    "GroupVersionResource": "manager.resources",
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
}

__all__ = [
    "CONFIGMAPS",
    "CONTROLLER_OWNER_UID_INDEX",
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
    "ApiClient",
    "ApiError",
    "BadRequest",
    "BucketRateLimiter",
    "Conflict",
    "Controller",
    "ControllerContext",
    "ControllerExpectations",
    "DelayingQueue",
    "DeletedFinalStateUnknown",
    "EventHandler",
    "EventHandlerFuncs",
    "EventRecorder",
    "Expired",
    "Forbidden",
    "GroupVersionResource",
    "HandlerRegistration",
    "Indexer",
    "InformerFactory",
    "Invalid",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter",
    "NotFound",
    "PolicyRule",
    "Queue",
    "QueueShutDown",
    "RateLimiter",
    "RateLimitingQueue",
    "Request",
    "Result",
    "SecondaryQueue",
    "ServerError",
    "SharedInformer",
    "TerminalError",
    "TooManyRequests",
    "Watch",
    "controller_owner",
    "default_controller_rate_limiter",
    "default_item_based_rate_limiter",
    "final_object",
    "for_",
    "format_time",
    "owns",
    "unwrap_tombstone",
    "watches",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'manager' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
